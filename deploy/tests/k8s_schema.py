"""The field names and value rules of the Kubernetes objects deploy/ uses, as the API server
knows them (core v1, apps/v1, rbac.authorization.k8s.io/v1, admissionregistration.k8s.io/v1,
resource.k8s.io/v1), for checking manifests offline: helm and kubeconform are not Debian
packages and there is no cluster in the tests.

Only the fields deploy/ has a use for are listed; an unknown field is reported, so a typo
(`mountpath`, `extendedResourceNames`) cannot pass. A field the API has but this file lacks is
also reported: add it here, with its type.

check(obj, where) returns a list of "<where>: <field path>: <problem>" strings.
"""

import re

# ---------------------------------------------------------------------------------------------
# Value rules

DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
QUANTITY = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|[KMGTPE]i|[mkMGTPE]|)")
QUALIFIED_NAME = re.compile(
    r"(([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def dns_label(value):
    if not isinstance(value, str) or len(value) > 63 or not DNS_LABEL.fullmatch(value):
        return f"{value!r} is not a DNS label (RFC 1123, at most 63 characters)"
    return None


def dns_subdomain(value):
    if not isinstance(value, str) or len(value) > 253 or not DNS_SUBDOMAIN.fullmatch(value):
        return f"{value!r} is not a DNS subdomain (RFC 1123)"
    return None


def port_name(value):
    if dns_label(value) or len(value) > 15 or not re.search("[a-z]", value):
        return f"{value!r} is not a port name (IANA_SVC_NAME: at most 15 characters)"
    return None


def quantity(value):
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return f"{value!r} is not a quantity"
    if isinstance(value, str) and not QUANTITY.fullmatch(value):
        return f"{value!r} is not a quantity"
    return None


def qualified_name(value):
    if not isinstance(value, str) or not QUALIFIED_NAME.fullmatch(value):
        return f"{value!r} is not a qualified name ([domain/]name)"
    return None


def fully_qualified_name(value):
    """k8s-resource-fully-qualified-name: domain/C identifier (matchAttribute, derived names)."""
    if not isinstance(value, str) or "/" not in value or not QUALIFIED_NAME.fullmatch(value):
        return f"{value!r} is not a fully qualified name (domain/name, e.g. derived/numaNode)"
    return None


def absolute_path(value):
    if not isinstance(value, str) or not value.startswith("/") or "//" in value or \
            "/../" in value + "/":
        return f"{value!r} is not a clean absolute path"
    return None


def one_of(*choices):
    def check(value):
        if value not in choices:
            return f"{value!r} is not one of {', '.join(map(str, choices))}"
        return None
    return check


def not_empty(value):
    if not isinstance(value, str) or not value.strip():
        return "must not be empty"
    return None


def label_key(value):
    return qualified_name(value)


# ---------------------------------------------------------------------------------------------
# Type descriptions
#
#   "string" "int" "bool" "any"          scalars (any: not checked, e.g. opaque parameters)
#   Str(rule) Int(minimum)               scalars with a rule
#   Obj({...}, required=[...], one_of=[...])   an object with known fields
#   [T]                                  a list of T
#   Map(key_rule, T)                     a map with free keys


class Str:
    def __init__(self, rule=None):
        self.rule = rule


class Int:
    def __init__(self, minimum=None, maximum=None):
        self.minimum, self.maximum = minimum, maximum


class IntOrString:
    pass


class Map:
    def __init__(self, key_rule, value):
        self.key_rule, self.value = key_rule, value


class Obj:
    def __init__(self, fields, required=(), one_of=(), rule=None):
        self.fields, self.required, self.one_of, self.rule = fields, required, one_of, rule


STRING_MAP = Map(label_key, Str())

OBJECT_META = Obj({
    "name": Str(), "namespace": Str(dns_label), "generateName": Str(),
    "labels": STRING_MAP, "annotations": STRING_MAP,
}, required=["name"])

TEMPLATE_META = Obj({"labels": STRING_MAP, "annotations": STRING_MAP})

LABEL_SELECTOR = Obj({
    "matchLabels": STRING_MAP,
    "matchExpressions": [Obj({"key": Str(label_key),
                              "operator": Str(one_of("In", "NotIn", "Exists", "DoesNotExist")),
                              "values": [Str()]}, required=["key", "operator"])],
})

# -- core/v1 ----------------------------------------------------------------------------------

SECCOMP = Obj({"type": Str(one_of("RuntimeDefault", "Unconfined", "Localhost")),
               "localhostProfile": Str()}, required=["type"])
SELINUX = Obj({"user": Str(), "role": Str(), "type": Str(), "level": Str()})

CAPABILITY = Str(lambda v: None if re.fullmatch(r"[A-Z_]+", v) and not v.startswith("CAP_")
                 else f"{v!r} is not a capability name (upper case, without CAP_)")

CONTAINER_SECURITY = Obj({
    "runAsUser": Int(0), "runAsGroup": Int(0), "runAsNonRoot": "bool", "privileged": "bool",
    "allowPrivilegeEscalation": "bool", "readOnlyRootFilesystem": "bool",
    "capabilities": Obj({"add": [CAPABILITY], "drop": [CAPABILITY]}),
    "seccompProfile": SECCOMP, "seLinuxOptions": SELINUX,
    "procMount": Str(one_of("Default", "Unmasked")),
})

POD_SECURITY = Obj({
    "runAsUser": Int(0), "runAsGroup": Int(0), "runAsNonRoot": "bool", "fsGroup": Int(0),
    "supplementalGroups": [Int(0)], "seccompProfile": SECCOMP, "seLinuxOptions": SELINUX,
})

PROBE = Obj({
    "httpGet": Obj({"path": Str(absolute_path), "port": IntOrString(), "host": Str(),
                    "scheme": Str(one_of("HTTP", "HTTPS")),
                    "httpHeaders": [Obj({"name": Str(), "value": Str()},
                                        required=["name", "value"])]},
                   required=["port"]),
    "tcpSocket": Obj({"port": IntOrString(), "host": Str()}, required=["port"]),
    "exec": Obj({"command": [Str()]}),
    "grpc": Obj({"port": Int(1, 65535), "service": Str()}, required=["port"]),
    "initialDelaySeconds": Int(0), "periodSeconds": Int(1), "timeoutSeconds": Int(1),
    "successThreshold": Int(1), "failureThreshold": Int(1),
    "terminationGracePeriodSeconds": Int(1),
}, one_of=[("httpGet", "tcpSocket", "exec", "grpc")])

ENV_VAR = Obj({
    "name": Str(lambda v: None if C_IDENTIFIER.fullmatch(v) else f"{v!r} is not a C identifier"),
    "value": Str(),
    "valueFrom": Obj({
        "fieldRef": Obj({"fieldPath": Str(one_of(
            "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
            "spec.serviceAccountName", "status.hostIP", "status.podIP", "status.podIPs")),
            "apiVersion": Str()}, required=["fieldPath"]),
        "resourceFieldRef": Obj({"resource": Str(), "containerName": Str(), "divisor": "any"},
                                required=["resource"]),
    }, one_of=[("fieldRef", "resourceFieldRef")]),
}, required=["name"])

RESOURCES = Obj({
    "requests": Map(qualified_name, Str(quantity)),
    "limits": Map(qualified_name, Str(quantity)),
    "claims": [Obj({"name": Str(dns_label), "request": Str()}, required=["name"])],
})

CONTAINER = Obj({
    "name": Str(dns_label), "image": Str(not_empty),
    "imagePullPolicy": Str(one_of("Always", "IfNotPresent", "Never")),
    "command": [Str()], "args": [Str()], "workingDir": Str(absolute_path),
    "env": [ENV_VAR],
    "ports": [Obj({"name": Str(port_name), "containerPort": Int(1, 65535),
                   "hostPort": Int(1, 65535), "protocol": Str(one_of("TCP", "UDP", "SCTP"))},
                  required=["containerPort"])],
    "livenessProbe": PROBE, "readinessProbe": PROBE, "startupProbe": PROBE,
    "resources": RESOURCES,
    "securityContext": CONTAINER_SECURITY,
    "volumeMounts": [Obj({"name": Str(dns_label), "mountPath": Str(absolute_path),
                          "readOnly": "bool", "subPath": Str(),
                          "mountPropagation": Str(one_of("None", "HostToContainer",
                                                         "Bidirectional"))},
                         required=["name", "mountPath"])],
}, required=["name", "image"])

VOLUME = Obj({
    "name": Str(dns_label),
    "hostPath": Obj({"path": Str(absolute_path),
                     "type": Str(one_of("", "DirectoryOrCreate", "Directory", "FileOrCreate",
                                        "File", "Socket", "CharDevice", "BlockDevice"))},
                    required=["path"]),
    "emptyDir": Obj({"medium": Str(one_of("", "Memory")), "sizeLimit": Str(quantity)}),
}, required=["name"], one_of=[("hostPath", "emptyDir")])

TOLERATION = Obj({
    "key": Str(label_key), "operator": Str(one_of("Exists", "Equal")), "value": Str(),
    "effect": Str(one_of("NoSchedule", "PreferNoSchedule", "NoExecute")),
    "tolerationSeconds": "int",
})

POD_SPEC = Obj({
    "containers": [CONTAINER], "initContainers": [CONTAINER], "volumes": [VOLUME],
    "nodeSelector": STRING_MAP, "nodeName": Str(dns_subdomain), "tolerations": [TOLERATION],
    "serviceAccountName": Str(dns_subdomain), "automountServiceAccountToken": "bool",
    "priorityClassName": Str(dns_subdomain), "hostNetwork": "bool", "hostPID": "bool",
    "hostIPC": "bool",
    "dnsPolicy": Str(one_of("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None")),
    "terminationGracePeriodSeconds": Int(0), "securityContext": POD_SECURITY,
    "restartPolicy": Str(one_of("Always", "OnFailure", "Never")),
    "resourceClaims": [Obj({"name": Str(dns_label), "resourceClaimName": Str(dns_subdomain),
                            "resourceClaimTemplateName": Str(dns_subdomain)},
                           required=["name"],
                           one_of=[("resourceClaimName", "resourceClaimTemplateName")])],
}, required=["containers"])

# -- resource.k8s.io/v1 -----------------------------------------------------------------------

CEL_SELECTOR = Obj({"cel": Obj({"expression": Str(not_empty)}, required=["expression"])},
                   required=["cel"])

DEVICE_TOLERATION = Obj({
    "key": Str(label_key), "operator": Str(one_of("Exists", "Equal")), "value": Str(),
    "effect": Str(one_of("NoSchedule", "NoExecute")), "tolerationSeconds": "int",
})

CAPACITY_REQUIREMENTS = Obj({"requests": Map(qualified_name, Str(quantity))})

DERIVED_ATTRIBUTES = [Obj({"name": Str(fully_qualified_name), "expression": Str(not_empty)},
                          required=["name", "expression"])]

ALLOCATION_MODE = Str(one_of("ExactCount", "All"))

EXACT_REQUEST = Obj({
    "deviceClassName": Str(dns_subdomain), "selectors": [CEL_SELECTOR],
    "allocationMode": ALLOCATION_MODE, "count": Int(1), "adminAccess": "bool",
    "tolerations": [DEVICE_TOLERATION], "capacity": CAPACITY_REQUIREMENTS,
    "derivedAttributes": DERIVED_ATTRIBUTES,
}, required=["deviceClassName"])

SUB_REQUEST = Obj({
    "name": Str(dns_label), "deviceClassName": Str(dns_subdomain), "selectors": [CEL_SELECTOR],
    "allocationMode": ALLOCATION_MODE, "count": Int(1), "tolerations": [DEVICE_TOLERATION],
    "capacity": CAPACITY_REQUIREMENTS, "derivedAttributes": DERIVED_ATTRIBUTES,
}, required=["name", "deviceClassName"])

OPAQUE_CONFIG = Obj({"driver": Str(dns_subdomain), "parameters": "any"},
                    required=["driver", "parameters"])

CLAIM_SPEC = Obj({"devices": Obj({
    "requests": [Obj({"name": Str(dns_label), "exactly": EXACT_REQUEST,
                      "firstAvailable": [SUB_REQUEST]},
                     required=["name"], one_of=[("exactly", "firstAvailable")])],
    "constraints": [Obj({"requests": [Str()], "matchAttribute": Str(fully_qualified_name),
                         "distinctAttribute": Str(fully_qualified_name)},
                        one_of=[("matchAttribute", "distinctAttribute")])],
    "config": [Obj({"requests": [Str()], "opaque": OPAQUE_CONFIG}, required=["opaque"])],
})})

DEVICE_CLASS_SPEC = Obj({
    "selectors": [CEL_SELECTOR],
    "config": [Obj({"opaque": OPAQUE_CONFIG}, required=["opaque"])],
    "extendedResourceName": Str(qualified_name),
})

# -- rbac, admissionregistration --------------------------------------------------------------

VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection",
         "use", "bind", "escalate", "impersonate", "*")

# DRA's synthetic verbs on resourceclaims/driver (resource.k8s.io/v1 VerbPrefixAssociatedNode,
# VerbPrefixArbitraryNode): "<prefix>:<verb>".
DRA_NODE_VERBS = tuple(f"{prefix}:{verb}" for prefix in ("associated-node", "arbitrary-node")
                       for verb in ("create", "update", "patch", "delete"))

POLICY_RULE = Obj({"apiGroups": [Str()], "resources": [Str(not_empty)],
                   "verbs": [Str(one_of(*VERBS, *DRA_NODE_VERBS))], "resourceNames": [Str()],
                   "nonResourceURLs": [Str()]}, required=["verbs"])

NAMED_CEL = Obj({"name": Str(not_empty), "expression": Str(not_empty)},
                required=["name", "expression"])

VAP_SPEC = Obj({
    "failurePolicy": Str(one_of("Fail", "Ignore")),
    "matchConstraints": Obj({
        "resourceRules": [Obj({
            "apiGroups": [Str()], "apiVersions": [Str()],
            "operations": [Str(one_of("CREATE", "UPDATE", "DELETE", "CONNECT", "*"))],
            "resources": [Str(not_empty)], "resourceNames": [Str()],
            "scope": Str(one_of("Cluster", "Namespaced", "*"))})],
        "matchPolicy": Str(one_of("Exact", "Equivalent")),
        "namespaceSelector": LABEL_SELECTOR, "objectSelector": LABEL_SELECTOR,
    }, required=["resourceRules"]),
    "matchConditions": [NAMED_CEL],
    "variables": [NAMED_CEL],
    "validations": [Obj({"expression": Str(not_empty), "message": Str(),
                         "messageExpression": Str(), "reason": Str()},
                        required=["expression"])],
}, required=["matchConstraints", "validations"])

# ---------------------------------------------------------------------------------------------
# The kinds

KINDS = {
    ("v1", "Namespace"): Obj({}),
    ("v1", "ServiceAccount"): Obj({"automountServiceAccountToken": "bool"}),
    ("v1", "Pod"): Obj({"spec": POD_SPEC}, required=["spec"]),
    ("apps/v1", "DaemonSet"): Obj({"spec": Obj({
        "selector": LABEL_SELECTOR,
        "template": Obj({"metadata": TEMPLATE_META, "spec": POD_SPEC}, required=["spec"]),
        "updateStrategy": Obj({
            "type": Str(one_of("RollingUpdate", "OnDelete")),
            "rollingUpdate": Obj({"maxUnavailable": IntOrString(), "maxSurge": IntOrString()}),
        }),
        "minReadySeconds": Int(0), "revisionHistoryLimit": Int(0),
    }, required=["selector", "template"])}, required=["spec"]),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): Obj({"rules": [POLICY_RULE]}),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): Obj({
        "roleRef": Obj({"apiGroup": Str(one_of("rbac.authorization.k8s.io")),
                        "kind": Str(one_of("ClusterRole", "Role")), "name": Str(not_empty)},
                       required=["apiGroup", "kind", "name"]),
        "subjects": [Obj({"kind": Str(one_of("ServiceAccount", "User", "Group")),
                          "name": Str(not_empty), "namespace": Str(dns_label),
                          "apiGroup": Str()}, required=["kind", "name"])],
    }, required=["roleRef"]),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"): Obj(
        {"spec": VAP_SPEC}, required=["spec"]),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"): Obj({"spec": Obj({
        "policyName": Str(not_empty),
        "validationActions": [Str(one_of("Deny", "Warn", "Audit"))],
        "matchResources": "any", "paramRef": "any",
    }, required=["policyName", "validationActions"])}, required=["spec"]),
    ("resource.k8s.io/v1", "DeviceClass"): Obj({"spec": DEVICE_CLASS_SPEC}, required=["spec"]),
    ("resource.k8s.io/v1", "ResourceClaim"): Obj({"spec": CLAIM_SPEC}, required=["spec"]),
    ("resource.k8s.io/v1", "ResourceClaimTemplate"): Obj({"spec": Obj({
        "metadata": TEMPLATE_META, "spec": CLAIM_SPEC}, required=["spec"])}, required=["spec"]),
}

NAMESPACED = {"ServiceAccount", "Pod", "DaemonSet", "ResourceClaim", "ResourceClaimTemplate"}
# metadata.name rule per kind (the rest: DNS subdomain).
NAME_RULES = {"Namespace": dns_label, "Pod": dns_subdomain}


def check_value(spec, value, path, problems):
    if spec == "any":
        return
    if spec == "string":
        spec = Str()
    if spec == "int":
        spec = Int()
    if spec == "bool":
        if not isinstance(value, bool):
            problems.append(f"{path}: {value!r} is not a boolean")
        return
    if isinstance(spec, Str):
        # Quantities may be written as YAML integers.
        if spec.rule is quantity:
            problem = quantity(value)
        elif not isinstance(value, str):
            problem = f"{value!r} is not a string"
        else:
            problem = spec.rule(value) if spec.rule else None
        if problem:
            problems.append(f"{path}: {problem}")
        return
    if isinstance(spec, Int):
        if isinstance(value, bool) or not isinstance(value, int):
            problems.append(f"{path}: {value!r} is not an integer")
        elif spec.minimum is not None and value < spec.minimum or \
                spec.maximum is not None and value > spec.maximum:
            problems.append(f"{path}: {value} is out of range")
        return
    if isinstance(spec, IntOrString):
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            problems.append(f"{path}: {value!r} is neither an integer nor a string")
        return
    if isinstance(spec, list):
        if not isinstance(value, list):
            problems.append(f"{path}: expected a list, found {type(value).__name__}")
            return
        for i, item in enumerate(value):
            check_value(spec[0], item, f"{path}[{i}]", problems)
        return
    if isinstance(spec, Map):
        if not isinstance(value, dict):
            problems.append(f"{path}: expected a map, found {type(value).__name__}")
            return
        for key, item in value.items():
            problem = spec.key_rule(key) if spec.key_rule else None
            if problem:
                problems.append(f"{path}: key {problem}")
            check_value(spec.value, item, f"{path}[{key}]", problems)
        return
    if isinstance(spec, Obj):
        if not isinstance(value, dict):
            problems.append(f"{path}: expected an object, found {type(value).__name__}")
            return
        for key, item in value.items():
            if key not in spec.fields:
                problems.append(f"{path}: unknown field {key!r}")
                continue
            check_value(spec.fields[key], item, f"{path}.{key}" if path else key, problems)
        for key in spec.required:
            if key not in value:
                problems.append(f"{path or '.'}: missing required field {key!r}")
        for group in spec.one_of:
            present = [key for key in group if key in value]
            if len(present) != 1:
                problems.append(f"{path or '.'}: exactly one of {', '.join(group)} is required "
                                f"(found {', '.join(present) or 'none'})")
        return
    raise TypeError(f"bad schema at {path}: {spec!r}")


def check(obj, where):
    """Problems with one object: its kind, its fields, its metadata."""
    if not isinstance(obj, dict):
        return [f"{where}: not a mapping"]
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    spec = KINDS.get((api_version, kind))
    if spec is None:
        return [f"{where}: unexpected apiVersion/kind {api_version!r}/{kind!r} (known: " +
                ", ".join(f"{a} {k}" for a, k in sorted(KINDS)) + ")"]
    problems = []
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    check_value(spec, body, "", problems)
    metadata = obj.get("metadata")
    if metadata is None:
        problems.append("metadata: missing")
    else:
        check_value(OBJECT_META, metadata, "metadata", problems)
        name = metadata.get("name") if isinstance(metadata, dict) else None
        if isinstance(name, str):
            problem = NAME_RULES.get(kind, dns_subdomain)(name)
            if problem:
                problems.append(f"metadata.name: {problem}")
        if kind in NAMESPACED and "namespace" not in (metadata or {}):
            problems.append("metadata.namespace: missing (a namespaced object states its "
                            "namespace in deploy/)")
        if kind not in NAMESPACED and "namespace" in (metadata or {}):
            problems.append("metadata.namespace: set on a cluster-scoped object")
    return [f"{where}: {p}" for p in problems]
