#!/usr/bin/python3
"""ctest deploy.yaml_structure: every YAML file under deploy/ parses and is what the API server
would accept, as far as field names, types and references go (k8s_schema.py), without a cluster:

- the chart: Chart.yaml and values.yaml, and the chart rendered (scripts/render-manifests.py)
  with its defaults and with value variants that switch every `if` the other way;
- deploy/manifests/ and every example under deploy/examples/;
- across objects: the DaemonSet's volumes, mounts, probes, flags and host paths; RBAC as the
  driver uses it (exactly these rules, see node/kube/client.cpp); claims, classes, pods and
  namespaces that refer to each other.

Usage: check_yaml.py REPO_ROOT
"""

import importlib.util
import pathlib
import re
import sys

try:
    import yaml
except ImportError:
    sys.exit("check_yaml: needs PyYAML (Debian package python3-yaml, which "
             "scripts/install-deps.sh must install)")

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import k8s_schema  # noqa: E402

# What the daemon asks of the API server (node/kube/client.cpp; node/daemon/daemon.cpp calls them):
# listResourceSlices (list), watchResourceSlices (watch), createResourceSlice (create),
# updateResourceSlice (update, a PUT), deleteResourceSlice (delete), getResourceClaim (get),
# getNode (get), applyResourceClaimStatus (patch of resourceclaims/status, and the API server's
# check of the driver's own entries: resourceclaims/driver associated-node:patch). A new request
# in the code needs a rule here and in the chart's ClusterRole.


def expected_rules(driver_name):
    return [
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"],
         "verbs": ["list", "watch", "create", "update", "delete"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["get"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/status"], "verbs": ["patch"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/driver"],
         "resourceNames": [driver_name], "verbs": ["associated-node:patch"]},
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
    ]


# Daemon flags naming host folders that the kubelet or the container runtime use by path: each
# must be mounted from the same host path at the same path in the container.
SAME_PATH_FLAGS = ["--kubelet-registry-dir", "--cdi-dir", "--metadata-dir", "--state-dir"]
# Flags naming host folders the daemon only reads, by the value naming the host folder
# (values.yaml: hostRoots): mounted read-only, under any path. --proc-root only when it is set.
READ_ONLY_FLAGS = {"--sysfs-root": "sys", "--dev-root": "dev", "--proc-root": "proc"}

# Value variants that flip every `if` of the templates.
VARIANTS = [
    [],
    ["namespace.create=false", "validatingAdmissionPolicy.enabled=false", "hostNetwork=false",
     "readDeviceSerialNumbers=true", "priorityClassName=", "deviceClasses.gpu.enabled=false",
     "deviceClasses.cpu.extendedResourceName=numa.dra.dev/cpu",
     "driverName=gpu.example.com", "hostRoots.sys=/srv/machine/sys",
     "hostRoots.dev=/srv/machine/dev", "hostRoots.proc=/srv/machine/proc",
     "apiServer.host=192.0.2.10", "apiServer.port=6443"],
]
EXTRA_ARGS_VALUES = {"extraArgs": ["--keep-slices-on-exit", "--metadata-versions=v1beta1,v1alpha1"]}

problems = []


def problem(message):
    problems.append(message)


def load_renderer(repo):
    spec = importlib.util.spec_from_file_location(
        "render_manifests", repo / "scripts" / "render-manifests.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_documents(path):
    """(index, object) of every non-empty document of a YAML file."""
    try:
        docs = list(yaml.safe_load_all(path.read_text()))
    except yaml.YAMLError as error:
        problem(f"{path}: does not parse: {error}")
        return []
    return [(i + 1, d) for i, d in enumerate(docs) if d is not None]


def check_objects(objects, context):
    """objects: list of (where, obj). Schema, then cross-object references."""
    for where, obj in objects:
        for p in k8s_schema.check(obj, where):
            problem(p)
    by_kind = {}
    for where, obj in objects:
        if isinstance(obj, dict):
            by_kind.setdefault(obj.get("kind"), []).append((where, obj))
    return by_kind


def name_of(obj):
    return (obj.get("metadata") or {}).get("name")


def namespace_of(obj):
    return (obj.get("metadata") or {}).get("namespace")


# ---------------------------------------------------------------------------------------------
# The driver: DaemonSet, RBAC, service account, policy


def flag_values(args):
    values = {}
    for arg in args:
        if not isinstance(arg, str) or not arg.startswith("--"):
            problem(f"DaemonSet: argument {arg!r} is not a --flag")
            continue
        name, _, value = arg.partition("=")
        values[name] = value
    return values


def metrics_port(container):
    """The port of --metrics-addr=:PORT, as a number (None when not of that form)."""
    addr = flag_values(container.get("args") or []).get("--metrics-addr", "")
    return int(addr[1:]) if re.fullmatch(r":[0-9]+", addr) else None


def check_daemonset(where, ds, service_accounts, values):
    driver_name = values["driverName"]
    spec = ds.get("spec", {})
    template = spec.get("template", {})
    pod = template.get("spec", {})
    labels = (template.get("metadata") or {}).get("labels") or {}
    for key, value in ((spec.get("selector") or {}).get("matchLabels") or {}).items():
        if labels.get(key) != value:
            problem(f"{where}: selector label {key}={value} is not on the pod template")
    if (pod.get("nodeSelector") or {}).get("kubernetes.io/os") != "linux":
        problem(f"{where}: nodeSelector must have kubernetes.io/os: linux")
    sa = pod.get("serviceAccountName")
    if (sa, namespace_of(ds)) not in service_accounts:
        problem(f"{where}: serviceAccountName {sa!r} is not a ServiceAccount of the chart in "
                f"namespace {namespace_of(ds)!r}")
    if pod.get("hostNetwork") and pod.get("dnsPolicy") != "ClusterFirstWithHostNet":
        problem(f"{where}: hostNetwork needs dnsPolicy ClusterFirstWithHostNet")
    volumes = {v.get("name"): v for v in pod.get("volumes") or []}
    if len(volumes) != len(pod.get("volumes") or []):
        problem(f"{where}: volume names are not unique")
    containers = pod.get("containers") or []
    if len(containers) != 1:
        problem(f"{where}: expected one container, found {len(containers)}")
        return
    container = containers[0]
    mounts = container.get("volumeMounts") or []
    mount_paths = [m.get("mountPath") for m in mounts]
    if len(set(mount_paths)) != len(mount_paths):
        problem(f"{where}: two volumeMounts share a mountPath")
    for mount in mounts:
        if mount.get("name") not in volumes:
            problem(f"{where}: volumeMount {mount.get('name')!r} has no volume")
    ports = {p.get("name"): p for p in container.get("ports") or []}
    for probe_name, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        probe = (container.get(probe_name) or {}).get("httpGet")
        if not probe:
            problem(f"{where}: {probe_name} must be an httpGet on {path}")
            continue
        if probe.get("path") != path:
            problem(f"{where}: {probe_name} path is {probe.get('path')!r}, not {path}")
        if pod.get("hostNetwork"):
            # A declared port would be a hostPort, which keeps an update's surge pod off the node.
            if ports:
                problem(f"{where}: with hostNetwork the container must declare no ports")
            if probe.get("port") != metrics_port(container):
                problem(f"{where}: {probe_name} port {probe.get('port')!r} is not the "
                        f"--metrics-addr port {metrics_port(container)!r}")
        elif probe.get("port") not in ports and probe.get("port") != (
                ports.get("metrics") or {}).get("containerPort"):
            problem(f"{where}: {probe_name} port {probe.get('port')!r} is neither a named port nor the metrics port")
    env = {e.get("name"): e for e in container.get("env") or []}
    field = lambda n: ((env.get(n) or {}).get("valueFrom") or {}).get("fieldRef", {}).get(
        "fieldPath")
    if field("NODE_NAME") != "spec.nodeName":
        problem(f"{where}: NODE_NAME must come from the downward API's spec.nodeName")
    if field("POD_UID") != "metadata.uid":
        problem(f"{where}: POD_UID must come from the downward API's metadata.uid")
    resources = container.get("resources") or {}
    for kind in ("requests", "limits"):
        for resource in ("cpu", "memory"):
            if resource not in (resources.get(kind) or {}):
                problem(f"{where}: resources.{kind}.{resource} is not set")
    security = container.get("securityContext") or {}
    if security.get("privileged") is not False or security.get("allowPrivilegeEscalation") \
            is not False:
        problem(f"{where}: the container must set privileged: false and "
                "allowPrivilegeEscalation: false")
    if "ALL" not in ((security.get("capabilities") or {}).get("drop") or []):
        problem(f"{where}: the container must drop ALL capabilities")

    flags = flag_values(container.get("args") or [])
    if flags.get("--driver-name") != driver_name:
        problem(f"{where}: --driver-name is {flags.get('--driver-name')!r}, the chart's "
                f"DeviceClasses say {driver_name!r}")
    port = (ports.get("metrics") or {}).get("containerPort")
    if not pod.get("hostNetwork") and flags.get("--metrics-addr") != f":{port}":
        problem(f"{where}: --metrics-addr {flags.get('--metrics-addr')!r} is not the metrics "
                f"port {port}")

    def volume_for(path):
        """The mount that holds `path` (the deepest), and its volume."""
        best = None
        for mount in mounts:
            mp = mount.get("mountPath", "")
            if path == mp or path.startswith(mp.rstrip("/") + "/"):
                if best is None or len(mp) > len(best.get("mountPath", "")):
                    best = mount
        return best, volumes.get(best.get("name")) if best else None

    same_path = {f: flags.get(f) for f in SAME_PATH_FLAGS}
    plugins = flags.get("--kubelet-plugins-dir")
    same_path["--kubelet-plugins-dir (+ driver)"] = \
        f"{plugins}/{driver_name}" if plugins else None
    for flag, path in same_path.items():
        if not path:
            problem(f"{where}: {flag} is not given")
            continue
        mount, volume = volume_for(path)
        host = ((volume or {}).get("hostPath") or {}).get("path")
        if mount is None or host is None:
            problem(f"{where}: {flag}={path} is not on a hostPath volume")
            continue
        if host != mount.get("mountPath"):
            problem(f"{where}: {flag}={path}: host path {host} is mounted at "
                    f"{mount.get('mountPath')}; the kubelet and the runtime need the same path")
        if mount.get("readOnly"):
            problem(f"{where}: {flag}={path} is mounted read-only but the daemon writes there")
    env = {e.get("name"): e.get("value") for e in container.get("env") or []}
    api = values["apiServer"]
    wanted = {"KUBERNETES_SERVICE_HOST": api["host"], "KUBERNETES_SERVICE_PORT": api["port"]} \
        if api["host"] else {}
    got = {k: v for k, v in env.items() if k.startswith("KUBERNETES_SERVICE_")}
    if got != {k: str(v) for k, v in wanted.items()}:
        problem(f"{where}: apiServer {api} gives the container {got}, not {wanted}")
    for flag, root in READ_ONLY_FLAGS.items():
        host_path = values["hostRoots"][root]
        path = flags.get(flag)
        if not host_path:
            if path:
                problem(f"{where}: {flag}={path} although hostRoots.{root} is empty")
            continue
        mount, volume = volume_for(path or "/nonexistent")
        if not path or mount is None or mount.get("mountPath") != path:
            problem(f"{where}: {flag} must name a mount of the host's {host_path}")
            continue
        if ((volume or {}).get("hostPath") or {}).get("path") != host_path:
            problem(f"{where}: {flag}={path} is not the host's {host_path}")
        if not mount.get("readOnly"):
            problem(f"{where}: {flag}={path} ({host_path}) must be mounted read-only")


def check_rbac(by_kind, release_namespace, driver_name):
    roles = {name_of(o): (w, o) for w, o in by_kind.get("ClusterRole", [])}
    accounts = {(name_of(o), namespace_of(o)) for _, o in by_kind.get("ServiceAccount", [])}
    if len(roles) != 1:
        problem(f"chart: expected one ClusterRole, found {len(roles)}")
    for where, role in roles.values():
        if role.get("rules") != expected_rules(driver_name):
            problem(f"{where}: the rules are not the driver's least-privilege set "
                    f"(tests/check_yaml.py expected_rules): {role.get('rules')}")
    bindings = by_kind.get("ClusterRoleBinding", [])
    if len(bindings) != 1:
        problem(f"chart: expected one ClusterRoleBinding, found {len(bindings)}")
    for where, binding in bindings:
        ref = binding.get("roleRef", {})
        if ref.get("kind") != "ClusterRole" or ref.get("name") not in roles:
            problem(f"{where}: roleRef {ref} is not the chart's ClusterRole")
        for subject in binding.get("subjects") or []:
            if subject.get("kind") != "ServiceAccount" or \
                    (subject.get("name"), subject.get("namespace")) not in accounts:
                problem(f"{where}: subject {subject} is not the chart's ServiceAccount")
    for name, namespace in accounts:
        if namespace != release_namespace:
            problem(f"chart: ServiceAccount {name} is not in the release namespace")
    return accounts


def check_chart_rendering(label, docs, values):
    objects = [(f"{label}: {name} ({kind})", yaml.safe_load(body))
               for kind, _, name, body in docs]
    by_kind = check_objects(objects, label)
    namespaces = [name_of(o) for _, o in by_kind.get("Namespace", [])]
    if bool(namespaces) != bool(values["namespace"]["create"]):
        problem(f"{label}: namespace.create={values['namespace']['create']} but "
                f"{len(namespaces)} Namespace objects")
    accounts = check_rbac(by_kind, "numa-dra-driver", values["driverName"])
    daemonsets = by_kind.get("DaemonSet", [])
    if len(daemonsets) != 1:
        problem(f"{label}: expected one DaemonSet, found {len(daemonsets)}")
    for where, ds in daemonsets:
        check_daemonset(where, ds, accounts, values)
    classes = {name_of(o): o for _, o in by_kind.get("DeviceClass", [])}
    for kind, settings in values["deviceClasses"].items():
        name = f"{kind}.{values['driverName']}"
        if bool(settings["enabled"]) != (name in classes):
            problem(f"{label}: DeviceClass {name}: enabled={settings['enabled']} but "
                    f"{'present' if name in classes else 'absent'}")
        elif name in classes:
            erm = classes[name]["spec"].get("extendedResourceName")
            if erm != (settings["extendedResourceName"] or None):
                problem(f"{label}: DeviceClass {name}: extendedResourceName {erm!r}")
            for selector in classes[name]["spec"].get("selectors", []):
                expression = selector["cel"]["expression"]
                if f'device.driver == "{values["driverName"]}"' not in expression:
                    problem(f"{label}: DeviceClass {name} does not select the driver")
    names = [c["spec"].get("extendedResourceName") for c in classes.values()]
    names = [n for n in names if n]
    if len(names) != len(set(names)):
        problem(f"{label}: an extendedResourceName serves two DeviceClasses")
    policies = by_kind.get("ValidatingAdmissionPolicy", [])
    bindings = by_kind.get("ValidatingAdmissionPolicyBinding", [])
    if bool(policies) != bool(values["validatingAdmissionPolicy"]["enabled"]) or \
            len(policies) != len(bindings):
        problem(f"{label}: validatingAdmissionPolicy.enabled does not match the policy objects")
    for where, binding in bindings:
        if binding["spec"].get("policyName") not in {name_of(p) for _, p in policies}:
            problem(f"{where}: policyName is not the chart's policy")
    for where, policy in policies:
        account = next(iter(accounts))
        condition = policy["spec"]["matchConditions"][0]["expression"]
        if f"system:serviceaccount:{account[1]}:{account[0]}" not in condition:
            problem(f"{where}: matchConditions do not name the driver's service account")
    return classes


def check_chart(repo, renderer):
    chart_dir = repo / "deploy" / "helm" / "numa-dra-driver"
    chart = yaml.safe_load((chart_dir / "Chart.yaml").read_text())
    values = yaml.safe_load((chart_dir / "values.yaml").read_text())
    for key in ("apiVersion", "name", "version", "appVersion"):
        if key not in chart:
            problem(f"Chart.yaml: missing {key}")
    if chart.get("apiVersion") != "v2" or chart.get("name") != chart_dir.name:
        problem("Chart.yaml: apiVersion must be v2 and name the chart's folder")
    cmake = (repo / "CMakeLists.txt").read_text()
    version = re.search(r"project\(numa-dra-driver VERSION ([0-9.]+)", cmake)
    if not version or chart.get("appVersion") != version.group(1) or \
            values["image"]["tag"] != version.group(1):
        problem(f"chart: appVersion {chart.get('appVersion')!r} and image.tag "
                f"{values['image']['tag']!r} must be the project version "
                f"{version.group(1) if version else '?'} (CMakeLists.txt)")
    default_classes = None
    for variant in VARIANTS + [None]:
        vals = yaml.safe_load((chart_dir / "values.yaml").read_text())
        if variant is None:
            renderer.merge(vals, EXTRA_ARGS_VALUES)
            label = "chart with extraArgs"
        else:
            for assignment in variant:
                renderer.set_value(vals, assignment)
            label = "chart (" + (", ".join(variant) or "default values") + ")"
        try:
            _, docs = renderer.render_chart(chart_dir, vals, "numa-dra-driver", "numa-dra-driver")
        except renderer.RenderError as error:
            problem(f"{label}: {error}")
            continue
        classes = check_chart_rendering(label, docs, vals)
        if variant == []:
            default_classes = classes
        if variant is None:
            ds = [yaml.safe_load(b) for k, _, _, b in docs if k == "DaemonSet"][0]
            args = ds["spec"]["template"]["spec"]["containers"][0]["args"]
            if args[-2:] != EXTRA_ARGS_VALUES["extraArgs"]:
                problem(f"{label}: extraArgs are not the last arguments: {args[-3:]}")
    return default_classes or {}


# ---------------------------------------------------------------------------------------------
# Examples


def request_names(spec):
    names = set()
    for request in (spec.get("devices") or {}).get("requests") or []:
        names.add(request.get("name"))
        for sub in request.get("firstAvailable") or []:
            names.add(f"{request.get('name')}/{sub.get('name')}")
    return names


def check_claim_spec(where, spec, classes, admin_namespaces, namespace):
    requests = (spec.get("devices") or {}).get("requests") or []
    top = [r.get("name") for r in requests]
    if len(set(top)) != len(top):
        problem(f"{where}: request names are not unique")
    known = request_names(spec)
    for request in requests:
        alternatives = [request.get("exactly")] if request.get("exactly") else \
            request.get("firstAvailable") or []
        for alternative in alternatives:
            cls = alternative.get("deviceClassName")
            if cls not in classes:
                problem(f"{where}: request {request.get('name')}: DeviceClass {cls!r} is "
                        f"neither the chart's nor the example's")
            if alternative.get("adminAccess") and namespace not in admin_namespaces:
                problem(f"{where}: adminAccess in namespace {namespace!r}, which the example "
                        "does not label resource.kubernetes.io/admin-access: \"true\"")
    for constraint in (spec.get("devices") or {}).get("constraints") or []:
        for name in constraint.get("requests") or []:
            if name not in known:
                problem(f"{where}: constraint names unknown request {name!r}")


def check_example(folder, chart_classes):
    files = sorted(p for p in folder.rglob("*") if p.suffix in (".yaml", ".yml", ".json"))
    if not (folder / "README.md").exists():
        problem(f"{folder}: no README.md")
    if not files:
        problem(f"{folder}: no manifests")
    objects = []
    for path in files:
        for index, obj in load_documents(path):
            objects.append((f"{path}, document {index}", obj))
    by_kind = check_objects(objects, str(folder))
    classes = {name_of(c): c for c in chart_classes.values()}
    classes.update({name_of(o): o for _, o in by_kind.get("DeviceClass", [])})
    extended = {c["spec"].get("extendedResourceName") for c in classes.values()} - {None}
    admin_namespaces = {name_of(o) for _, o in by_kind.get("Namespace", [])
                        if ((o.get("metadata") or {}).get("labels") or {})
                        .get("resource.kubernetes.io/admin-access") == "true"}
    claims = {(namespace_of(o), name_of(o)) for _, o in by_kind.get("ResourceClaim", [])}
    templates = {(namespace_of(o), name_of(o))
                 for _, o in by_kind.get("ResourceClaimTemplate", [])}
    for where, claim in by_kind.get("ResourceClaim", []):
        check_claim_spec(where, claim.get("spec") or {}, classes, admin_namespaces,
                         namespace_of(claim))
    for where, template in by_kind.get("ResourceClaimTemplate", []):
        check_claim_spec(where, (template.get("spec") or {}).get("spec") or {}, classes,
                         admin_namespaces, namespace_of(template))
    for where, pod in by_kind.get("Pod", []):
        spec = pod.get("spec") or {}
        ns = namespace_of(pod)
        pod_claims = {}
        for entry in spec.get("resourceClaims") or []:
            pod_claims[entry.get("name")] = entry
            if "resourceClaimName" in entry and (ns, entry["resourceClaimName"]) not in claims:
                problem(f"{where}: ResourceClaim {ns}/{entry['resourceClaimName']} is not in "
                        "the example")
            if "resourceClaimTemplateName" in entry and \
                    (ns, entry["resourceClaimTemplateName"]) not in templates:
                problem(f"{where}: ResourceClaimTemplate {ns}/"
                        f"{entry['resourceClaimTemplateName']} is not in the example")
        used = set()
        for container in spec.get("containers") or []:
            resources = container.get("resources") or {}
            for claim in resources.get("claims") or []:
                if claim.get("name") not in pod_claims:
                    problem(f"{where}: container {container.get('name')} uses claim "
                            f"{claim.get('name')!r}, which the pod does not list")
                used.add(claim.get("name"))
            for kind in ("requests", "limits"):
                for resource in resources.get(kind) or {}:
                    if resource in ("cpu", "memory", "ephemeral-storage"):
                        continue
                    prefix = "deviceclass.resource.kubernetes.io/"
                    if resource.startswith(prefix):
                        if resource[len(prefix):] not in classes:
                            problem(f"{where}: {resource}: no such DeviceClass")
                    elif resource not in extended:
                        problem(f"{where}: {resource} is no DeviceClass's extendedResourceName")
            requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
            for resource in set(requests) & set(limits):
                if "/" in resource and str(requests[resource]) != str(limits[resource]):
                    problem(f"{where}: extended resource {resource}: requests must equal limits")
        for name in set(pod_claims) - used:
            problem(f"{where}: claim {name!r} is used by no container")


def main():
    repo = pathlib.Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else \
        pathlib.Path(__file__).resolve().parents[2]
    deploy = repo / "deploy"
    renderer = load_renderer(repo)
    chart_classes = check_chart(repo, renderer)
    checked = 0

    # Every YAML file under deploy/ but the chart's (templates are not YAML until rendered).
    chart_dir = deploy / "helm"
    files = sorted(p for p in deploy.rglob("*")
                   if p.suffix in (".yaml", ".yml", ".json") and chart_dir not in p.parents)
    for path in files:
        if "{{" in path.read_text():
            problem(f"{path}: holds template syntax outside the chart")
    manifests = [p for p in files if (deploy / "manifests") in p.parents]
    objects = [(f"{p}, document {i}", o) for p in manifests for i, o in load_documents(p)]
    by_kind = check_objects(objects, "manifests")
    if {name_of(o) for _, o in by_kind.get("DeviceClass", [])} != set(chart_classes):
        problem("deploy/manifests: DeviceClasses differ from the chart's default rendering")
    checked += len(manifests)
    stories = sorted(p for p in (deploy / "examples").iterdir() if p.is_dir())
    for story in stories:
        check_example(story, chart_classes)
    checked += sum(1 for p in files if (deploy / "examples") in p.parents)
    unchecked = [p for p in files if (deploy / "manifests") not in p.parents and
                 (deploy / "examples") not in p.parents]
    for path in unchecked:
        problem(f"{path}: a YAML file outside manifests/, examples/ and helm/ is not checked")

    if problems:
        for p in problems:
            print(p)
        print(f"check_yaml: {len(problems)} problem(s)")
        return 1
    print(f"check_yaml: the chart ({len(VARIANTS) + 1} renderings), {checked} YAML files, "
          f"{len(stories)} examples: no problems")
    return 0


if __name__ == "__main__":
    sys.exit(main())
