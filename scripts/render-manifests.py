#!/usr/bin/python3
"""Renders the Helm chart deploy/helm/numa-dra-driver without helm (not a Debian package).

    scripts/render-manifests.py                 # write deploy/manifests/*.yaml (default values)
    scripts/render-manifests.py --check DIR     # exit 1 with a diff if DIR is not up to date
    scripts/render-manifests.py --stdout [--set namespace.create=false] [--values my.yaml]

It understands exactly the part of Helm's template language the chart uses, and stops with an
error naming the template and line on anything else, so a template that helm would render
differently cannot slip through:

  {{ .Values.a.b }}  {{ .Release.Name }}  {{ .Release.Namespace }}
  {{ .Chart.Name }}  {{ .Chart.Version }}  {{ .Chart.AppVersion }}
  {{ quote .Values.x }}                      Go's %q of the value
  {{ toYaml .Values.x | nindent N }}         the value as helm's toYaml prints it, on new lines
  {{ if .Values.x }} ... {{ end }}           Go's truth: false, 0, "", empty list/map are false
  {{ if not .Values.x }} ... {{ end }}       its negation
  {{- ... -}}                                trim the white space before / after, as Go does

Stricter than helm on purpose: a missing value is an error (helm prints nothing), and so is
printing a list or a map without toYaml, or a string toYaml could not print the way helm does.

The output is the chart's objects in the order `helm install` creates them (by kind, then
template file name), each under a `# Source:` line like `helm template` prints: the
DeviceClasses in deviceclasses.yaml (dra-allocate reads them as they are), everything else in
numa-dra-driver.yaml. Needs PyYAML
(Debian: python3-yaml).
"""

import argparse
import difflib
import pathlib
import re
import sys

try:
    import yaml
except ImportError:  # pragma: no cover - depends on the machine
    sys.exit("render-manifests: needs PyYAML (Debian package python3-yaml)")

REPO = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_CHART = REPO / "deploy" / "helm" / "numa-dra-driver"
DEFAULT_OUTPUT_DIR = REPO / "deploy" / "manifests"

# helm's install order (pkg/releaseutil/kind_sorter.go); other kinds follow, by kind name.
INSTALL_ORDER = [
    "PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange",
    "PodSecurityPolicy", "PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList",
    "ConfigMap", "StorageClass", "PersistentVolume", "PersistentVolumeClaim",
    "CustomResourceDefinition", "ClusterRole", "ClusterRoleList", "ClusterRoleBinding",
    "ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList", "Service",
    "DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
    "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress",
    "APIService", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
]


class RenderError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Values


def lookup(context, path, where):
    """Resolves .Values.a.b / .Release.Name / .Chart.AppVersion; a missing key is an error."""
    parts = path.split(".")
    if parts[0] != "" or len(parts) < 3 or parts[1] not in context:
        raise RenderError(f"{where}: unsupported reference '{path}' (only .Values.*, "
                          ".Release.Name/Namespace and .Chart.Name/Version/AppVersion)")
    value = context[parts[1]]
    walked = "." + parts[1]
    for part in parts[2:]:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
            raise RenderError(f"{where}: unsupported key '{part}' in '{path}'")
        if not isinstance(value, dict) or part not in value:
            raise RenderError(f"{where}: '{path}' is not set ({walked} has no key '{part}')")
        value = value[part]
        walked += "." + part
    return value


def truthy(value):
    """Go template truth."""
    if value is None or value is False:
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value != 0
    if isinstance(value, (str, list, dict)):
        return len(value) > 0
    return True


def scalar_text(value, where):
    """What Go's text/template prints for a scalar."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value
    raise RenderError(f"{where}: cannot print {type(value).__name__} {value!r} without toYaml")


def go_quote(text, where):
    """Go's %q (sprig's quote): double quotes, backslash escapes."""
    out = ['"']
    escapes = {'"': '\\"', "\\": "\\\\", "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n",
               "\r": "\\r", "\t": "\\t", "\v": "\\v"}
    for ch in text:
        if ch in escapes:
            out.append(escapes[ch])
        elif ch.isprintable():
            out.append(ch)
        else:
            raise RenderError(f"{where}: quote of a non-printable character {ch!r}")
    out.append('"')
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# toYaml: what helm's toYaml (sigs.k8s.io/yaml, i.e. go-yaml v2) prints, for the shapes the
# chart's values have. Anything else is an error rather than a guess.

def plain_allowed(text):
    """Whether go-yaml's emitter writes `text` as a plain block scalar (its analyze_scalar),
    for printable ASCII without quotes or backslashes; None when this renderer cannot tell."""
    if not re.fullmatch(r"[\x20-\x7e]+", text) or re.search(r"[\"'\\`]", text):
        return None
    if text[0] == " " or text[-1] == " " or text.startswith(("---", "...")):
        return False
    if text[0] in "#,[]{}&*!|>%@":
        return False
    if text[0] in "-?" and (len(text) == 1 or text[1] == " "):
        return False
    if ": " in text or " #" in text or text.endswith(":"):
        return False
    return True


def yaml_string(text, where):
    if "\n" in text:
        raise RenderError(f"{where}: toYaml of a multi-line string is not supported")
    # A plain scalar that would read back as another type (true, yes, 1, 1.5, null, "", a
    # date): go-yaml double-quotes it. YAML 1.1's implicit types, as go-yaml v2 resolves them
    # (it also takes y/Y/n/N for booleans).
    tag = yaml.resolver.Resolver().resolve(yaml.ScalarNode, text, (True, False))
    if tag != "tag:yaml.org,2002:str" or text in ("y", "Y", "n", "N"):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if re.fullmatch(r"[0-9+-][0-9:._]*", text):
        # Sexagesimal numbers (1:20) and the like: go-yaml's rules differ from PyYAML's.
        raise RenderError(f"{where}: toYaml of {text!r} is not supported (helm might quote it "
                          "differently); simplify the value")
    allowed = plain_allowed(text)
    if allowed:
        return text
    if allowed is False and "'" not in text:
        return "'" + text + "'"  # go-yaml falls back to single quotes
    raise RenderError(f"{where}: toYaml of {text!r} is not supported (helm might quote it "
                      "differently); simplify the value")


def yaml_scalar(value, where):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if value is None:
        return "null"
    if isinstance(value, str):
        return yaml_string(value, where)
    raise RenderError(f"{where}: toYaml of {type(value).__name__} {value!r} is not supported")


def to_yaml_lines(value, where):
    if isinstance(value, dict):
        if not value:
            return ["{}"]
        lines = []
        for key in sorted(value):  # go-yaml sorts map keys
            if not isinstance(key, str):
                raise RenderError(f"{where}: toYaml of a non-string key {key!r}")
            item = value[key]
            head = yaml_string(key, where) + ":"
            if isinstance(item, dict) and item:
                lines.append(head)
                lines.extend("  " + line for line in to_yaml_lines(item, where))
            elif isinstance(item, list) and item:
                lines.append(head)  # go-yaml does not indent a sequence inside a mapping
                lines.extend(to_yaml_lines(item, where))
            else:
                lines.append(head + " " + to_yaml_lines(item, where)[0])
        return lines
    if isinstance(value, list):
        if not value:
            return ["[]"]
        lines = []
        for item in value:
            if isinstance(item, list) and item:
                raise RenderError(f"{where}: toYaml of a list inside a list is not supported")
            inner = to_yaml_lines(item, where)
            lines.append("- " + inner[0])
            lines.extend("  " + line for line in inner[1:])
        return lines
    return [yaml_scalar(value, where)]


def nindent(text, spaces):
    pad = " " * spaces
    return "\n" + pad + text.replace("\n", "\n" + pad)


# ---------------------------------------------------------------------------------------------
# Templates

ACTION = re.compile(r"\{\{(-[ \t])?(.*?)([ \t]-)?\}\}")
REF = r"\.[A-Za-z_][A-Za-z0-9_.]*"


def tokenize(source, name):
    """Text and actions, with Go's trim markers applied to the neighbouring text."""
    tokens = []  # ("text", str) | ("action", str, line)
    pos = 0
    for match in ACTION.finditer(source):
        line = source.count("\n", 0, match.start()) + 1
        text = source[pos:match.start()]
        if "{{" in text or "}}" in text:
            bad = line if "{{" not in text else source.count("\n", 0, pos + text.index("{{")) + 1
            raise RenderError(f"{name}:{bad}: unbalanced '{{{{' or '}}}}'")
        if match.group(1):  # "{{- " trims the white space before
            text = text.rstrip(" \t\r\n")
        tokens.append(["text", text])
        body = match.group(2)
        if "\n" in body:
            raise RenderError(f"{name}:{line}: an action must fit on one line")
        tokens.append(["action", body.strip(), line, bool(match.group(3))])
        pos = match.end()
    rest = source[pos:]
    if "{{" in rest or "}}" in rest:
        raise RenderError(f"{name}: unbalanced '{{{{' or '}}}}' after the last action")
    tokens.append(["text", rest])
    # " -}}" trims the white space after
    for i, token in enumerate(tokens):
        if token[0] == "action" and token[3] and i + 1 < len(tokens):
            tokens[i + 1][1] = tokens[i + 1][1].lstrip(" \t\r\n")
    return tokens


def evaluate(expr, context, where):
    """One pipeline: a reference, `quote REF`, or `toYaml REF | nindent N`."""
    if re.fullmatch(REF, expr):
        return scalar_text(lookup(context, expr, where), where)
    match = re.fullmatch(r"quote\s+(" + REF + r")", expr)
    if match:
        return go_quote(scalar_text(lookup(context, match.group(1), where), where), where)
    match = re.fullmatch(r"toYaml\s+(" + REF + r")\s*\|\s*nindent\s+([0-9]+)", expr)
    if match:
        value = lookup(context, match.group(1), where)
        return nindent("\n".join(to_yaml_lines(value, where)), int(match.group(2)))
    raise RenderError(f"{where}: unsupported template action '{{{{ {expr} }}}}'")


def render_template(source, name, context):
    tokens = tokenize(source, name)
    out = []
    # Each open `if`: (line, whether its body is emitted).
    stack = []

    def emitting():
        return all(active for _, active in stack)

    for token in tokens:
        if token[0] == "text":
            if emitting():
                out.append(token[1])
            continue
        _, expr, line, _ = token
        where = f"{name}:{line}"
        match = re.fullmatch(r"if\s+(not\s+)?(" + REF + r")", expr)
        if match:
            # Evaluated even in a skipped branch, so a misspelt value is always caught.
            truth = truthy(lookup(context, match.group(2), where))
            stack.append((line, truth != bool(match.group(1))))
        elif expr == "end":
            if not stack:
                raise RenderError(f"{where}: 'end' without 'if'")
            stack.pop()
        else:
            text = evaluate(expr, context, where)
            if emitting():
                out.append(text)
    if stack:
        raise RenderError(f"{name}:{stack[-1][0]}: 'if' without 'end'")
    return "".join(out)


def split_documents(text, name):
    """The non-empty YAML documents of a rendered template."""
    docs = []
    for chunk in re.split(r"(?m)^---[ \t]*$", text):
        body = chunk.strip("\n")
        meaningful = [l for l in body.split("\n") if l.strip() and not l.lstrip().startswith("#")]
        if not meaningful:
            if body.strip():
                raise RenderError(f"{name}: a document with only comments (put comments inside "
                                  "the document, and inside its `if`)")
            continue
        try:
            obj = yaml.safe_load(body)
        except yaml.YAMLError as error:
            raise RenderError(f"{name}: rendered YAML does not parse: {error}\n---\n{body}")
        if not isinstance(obj, dict) or "kind" not in obj or "apiVersion" not in obj:
            raise RenderError(f"{name}: a rendered document is not a Kubernetes object")
        docs.append((obj["kind"], body))
    return docs


def render_chart(chart_dir, values, release_name, namespace):
    chart = yaml.safe_load((chart_dir / "Chart.yaml").read_text())
    context = {
        "Values": values,
        "Release": {"Name": release_name, "Namespace": namespace},
        "Chart": {"Name": chart["name"], "Version": str(chart["version"]),
                  "AppVersion": str(chart["appVersion"])},
    }
    documents = []
    templates = sorted((chart_dir / "templates").glob("*"))
    for index, path in enumerate(templates):
        if path.suffix not in (".yaml", ".yml"):
            raise RenderError(f"{path}: only .yaml templates are supported (no helpers, no NOTES)")
        name = f"{chart['name']}/templates/{path.name}"
        rendered = render_template(path.read_text(), name, context)
        for kind, body in split_documents(rendered, name):
            documents.append((kind, index, name, body))

    def order(doc):
        kind = doc[0]
        if kind in INSTALL_ORDER:
            return (0, INSTALL_ORDER.index(kind), "", doc[1])
        return (1, 0, kind, doc[1])

    documents.sort(key=order)  # stable: template order within a kind
    return chart, documents


def set_value(values, assignment):
    """--set a.b=c, with helm's scalar types for true/false/integers."""
    if "=" not in assignment:
        raise RenderError(f"--set {assignment}: expected key=value")
    key, raw = assignment.split("=", 1)
    if raw in ("true", "false"):
        value = raw == "true"
    elif re.fullmatch(r"-?[0-9]+", raw):
        value = int(raw)
    else:
        value = raw
    node = values
    parts = key.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise RenderError(f"--set {assignment}: {part} is not a map")
    node[parts[-1]] = value


def merge(base, override):
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = value


# Which output file each kind goes to: the DeviceClasses apart, so they can be given to
# dra-allocate (which reads DeviceClasses, not DaemonSets) as they are.
OUTPUT_FILES = {"DeviceClass": "deviceclasses.yaml"}
MAIN_OUTPUT = "numa-dra-driver.yaml"


def output_files(chart, documents, description):
    """{file name: text} of the rendered chart."""
    files = {}
    for kind, _, name, body in documents:
        files.setdefault(OUTPUT_FILES.get(kind, MAIN_OUTPUT), []).append(
            f"---\n# Source: {name}\n{body}\n")
    texts = {}
    for file_name, parts in files.items():
        header = [
            f"# Generated by scripts/render-manifests.py from the Helm chart "
            f"deploy/helm/{chart['name']}",
            f"# ({description}).",
            "# Do not edit: change the chart, run the script and commit both.",
            "# Install: kubectl apply -f deploy/manifests/",
        ]
        texts[file_name] = "\n".join(header) + "\n" + "".join(parts)
    return texts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chart", type=pathlib.Path, default=DEFAULT_CHART)
    parser.add_argument("--values", type=pathlib.Path, action="append", default=[],
                        help="values file over the chart's values.yaml (repeatable)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--release-name", default="numa-dra-driver")
    parser.add_argument("--namespace", default="numa-dra-driver")
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--output-dir", type=pathlib.Path, default=DEFAULT_OUTPUT_DIR)
    out.add_argument("--stdout", action="store_true")
    out.add_argument("--check", type=pathlib.Path, metavar="DIR",
                     help="compare with the files in DIR instead of writing; exit 1 with a diff "
                          "if they differ")
    args = parser.parse_args()

    try:
        values = yaml.safe_load((args.chart / "values.yaml").read_text()) or {}
        for path in args.values:
            merge(values, yaml.safe_load(path.read_text()) or {})
        for assignment in args.set:
            set_value(values, assignment)
        chart, documents = render_chart(args.chart, values, args.release_name, args.namespace)
    except (RenderError, OSError, yaml.YAMLError) as error:
        print(f"render-manifests: {error}", file=sys.stderr)
        return 2

    defaults = not args.values and not args.set
    description = (("default values, " if defaults else "") +
                   f"release {args.release_name}, namespace {args.namespace}")
    texts = output_files(chart, documents, description)

    if args.stdout:
        sys.stdout.write("".join(texts[name] for name in sorted(texts)))
        return 0
    if args.check:
        different = False
        present = {p.name for p in args.check.glob("*.yaml")}
        for name in sorted(present - set(texts)):
            print(f"render-manifests: {args.check / name} is not part of the rendering",
                  file=sys.stderr)
            different = True
        for name, text in sorted(texts.items()):
            path = args.check / name
            current = path.read_text() if path.exists() else ""
            if current != text:
                sys.stdout.writelines(difflib.unified_diff(
                    current.splitlines(keepends=True), text.splitlines(keepends=True),
                    str(path), "rendered from the chart"))
                different = True
        if different:
            print(f"render-manifests: {args.check} is not the chart's rendering; run "
                  "scripts/render-manifests.py and commit the result", file=sys.stderr)
            return 1
        print(f"render-manifests: {args.check} is up to date ({len(documents)} objects in "
              f"{len(texts)} files)")
        return 0
    args.output_dir.mkdir(parents=True, exist_ok=True)
    for name, text in sorted(texts.items()):
        (args.output_dir / name).write_text(text)
    stale = {p.name for p in args.output_dir.glob("*.yaml")} - set(texts)
    for name in sorted(stale):
        (args.output_dir / name).unlink()
    print(f"render-manifests: wrote {len(documents)} objects to "
          + ", ".join(str(args.output_dir / name) for name in sorted(texts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
