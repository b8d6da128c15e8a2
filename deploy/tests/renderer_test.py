#!/usr/bin/python3
"""ctest deploy.renderer: scripts/render-manifests.py renders its template subset the way helm
does (trim markers, quote, toYaml | nindent, if/end) and stops, naming template and line, on
anything outside it.

Usage: renderer_test.py REPO_ROOT
"""

import importlib.util
import pathlib
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

REPO = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                    pathlib.Path(__file__).resolve().parents[2]).resolve()
spec = importlib.util.spec_from_file_location("render_manifests",
                                              REPO / "scripts" / "render-manifests.py")
renderer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(renderer)

CONTEXT = {
    "Values": {"name": "x", "on": True, "off": False, "zero": 0, "empty": "", "list": [],
               "port": 9287, "text": 'say "hi"\\now',
               "resources": {"requests": {"cpu": "50m", "memory": "64Mi"},
                             "limits": {"cpu": "1"}},
               "tolerations": [{"operator": "Exists"}, {"key": "a", "effect": "NoSchedule"}],
               "args": ["--flag", "--other=a,b"], "nested": {"inner": {"value": "v"}}},
    "Release": {"Name": "rel", "Namespace": "ns"},
    "Chart": {"Name": "chart", "Version": "1.0.0", "AppVersion": "1.0.0"},
}


def render(text):
    return renderer.render_template(text, "t.yaml", CONTEXT)


class Supported(unittest.TestCase):
    def test_references(self):
        self.assertEqual(render("{{ .Values.name }}/{{ .Release.Name }}/{{ .Release.Namespace }}"
                                "/{{ .Chart.Name }}/{{ .Chart.AppVersion }}"),
                         "x/rel/ns/chart/1.0.0")
        self.assertEqual(render("{{ .Values.nested.inner.value }} {{ .Values.port }} "
                                "{{ .Values.on }}"), "v 9287 true")

    def test_quote_is_go_percent_q(self):
        self.assertEqual(render("{{ quote .Values.text }}"), '"say \\"hi\\"\\\\now"')
        self.assertEqual(render("{{ quote .Values.port }}"), '"9287"')

    def test_trim_markers(self):
        self.assertEqual(render("a:  \n  {{- if .Values.on }}\n  b\n  {{- end }}\nc"),
                         "a:\n  b\nc")
        self.assertEqual(render("a {{ .Values.name -}}  \n\n b"), "a xb")

    def test_if_uses_go_truth(self):
        for key, shown in (("on", True), ("off", False), ("zero", False), ("empty", False),
                           ("list", False), ("resources", True)):
            self.assertEqual(render("{{ if .Values.%s }}yes{{ end }}" % key),
                             "yes" if shown else "", key)
        self.assertEqual(render("{{ if .Values.on }}{{ if .Values.off }}no{{ end }}y{{ end }}"),
                         "y")

    def test_if_not_negates_go_truth(self):
        for key, shown in (("on", False), ("off", True), ("empty", True), ("resources", False)):
            self.assertEqual(render("{{ if not .Values.%s }}yes{{ end }}" % key),
                             "yes" if shown else "", key)

    def test_to_yaml_like_helm(self):
        # go-yaml v2: sorted keys, sequences not indented under their key, ambiguous strings
        # double-quoted.
        self.assertEqual(render("r:{{ toYaml .Values.resources | nindent 2 }}"),
                         'r:\n  limits:\n    cpu: "1"\n  requests:\n    cpu: 50m\n'
                         '    memory: 64Mi')
        self.assertEqual(render("t:{{ toYaml .Values.tolerations | nindent 0 }}"),
                         "t:\n- operator: Exists\n- effect: NoSchedule\n  key: a")
        self.assertEqual(render("{{ toYaml .Values.args | nindent 4 }}"),
                         "\n    - --flag\n    - --other=a,b")
        self.assertEqual(render("{{ toYaml .Values.list | nindent 2 }}"), "\n  []")


class Refused(unittest.TestCase):
    def refused(self, text, message):
        with self.assertRaises(renderer.RenderError) as raised:
            render(text)
        self.assertIn(message, str(raised.exception))
        self.assertIn("t.yaml", str(raised.exception))

    def test_missing_value(self):
        self.refused("a\n{{ .Values.nope }}", "t.yaml:2: '.Values.nope' is not set")
        self.refused("{{ .Values.nested.nope.deeper }}", "has no key 'nope'")
        self.refused("{{ if .Values.nope }}{{ end }}", "is not set")
        self.refused("{{ if not .Values.nope }}{{ end }}", "is not set")

    def test_other_functions_and_objects(self):
        for action in ('{{ include "x" . }}', '{{ default "a" .Values.name }}',
                       "{{ .Capabilities.KubeVersion }}", "{{ .Values.name | upper }}",
                       "{{ $x := 1 }}", "{{ range .Values.list }}", "{{ else }}",
                       "{{/* comment */}}", "{{ template \"x\" }}", "{{ toYaml .Values.args }}"):
            self.refused(action, "unsupported")

    def test_structure(self):
        self.refused("{{ if .Values.on }}", "'if' without 'end'")
        self.refused("{{ end }}", "'end' without 'if'")
        self.refused("{{{ .Values.name }}", "unsupported")
        self.refused("a }} b", "unbalanced")
        self.refused("{{ .Values.name\n}}", "unbalanced")

    def test_printing_maps_lists_or_unsure_strings(self):
        self.refused("{{ .Values.resources }}", "without toYaml")
        self.refused("{{ .Values.list }}", "without toYaml")
        self.refused("{{ toYaml .Values.text | nindent 2 }}", "not supported")

    def test_comment_only_documents(self):
        with tempfile.TemporaryDirectory() as tmp:
            chart = pathlib.Path(tmp)
            (chart / "templates").mkdir()
            (chart / "Chart.yaml").write_text("name: c\nversion: 1.0.0\nappVersion: '1'\n")
            (chart / "templates" / "a.yaml").write_text(
                "# only a comment\n{{- if .Values.on }}\napiVersion: v1\nkind: Namespace\n"
                "metadata:\n  name: n\n{{- end }}\n")
            with self.assertRaises(renderer.RenderError) as raised:
                renderer.render_chart(chart, {"on": False}, "r", "n")
            self.assertIn("only comments", str(raised.exception))
            _, docs = renderer.render_chart(chart, {"on": True}, "r", "n")
            self.assertEqual([d[0] for d in docs], ["Namespace"])


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
