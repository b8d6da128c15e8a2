// Package oracle holds what the judges in tests/upstream share: the objects dra-allocate reads,
// decoded with upstream's own API types, and upstream's allocator set up as the scheduler sets
// it up.
package oracle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Inputs is what dra-allocate reads, decoded with upstream's own API types: what the
// API server would have stored, in input order.
type Inputs struct {
	Slices    []*resourceapi.ResourceSlice
	Classes   []*resourceapi.DeviceClass
	Claims    []*resourceapi.ResourceClaim
	Templates []*resourceapi.ResourceClaimTemplate
	Pods      []*v1.Pod
	Nodes     []*v1.Node
	// Order is the input order of the claims, templates and pods (dra-allocate allocates in it).
	Order []Ref
}

// RefKind names the list a Ref points into.
type RefKind int

const (
	ClaimRef RefKind = iota
	TemplateRef
	PodRef
)

// Ref is one claim, template or pod of an input, by its index in its list.
type Ref struct {
	Kind  RefKind
	Index int
}

// AddClaim appends a claim at the end of the input order.
func (in *Inputs) AddClaim(claim *resourceapi.ResourceClaim) {
	in.Order = append(in.Order, Ref{ClaimRef, len(in.Claims)})
	in.Claims = append(in.Claims, claim)
}

// AddTemplate appends a claim template at the end of the input order.
func (in *Inputs) AddTemplate(template *resourceapi.ResourceClaimTemplate) {
	in.Order = append(in.Order, Ref{TemplateRef, len(in.Templates)})
	in.Templates = append(in.Templates, template)
}

// AddPod appends a pod at the end of the input order.
func (in *Inputs) AddPod(pod *v1.Pod) {
	in.Order = append(in.Order, Ref{PodRef, len(in.Pods)})
	in.Pods = append(in.Pods, pod)
}

// Remove drops one claim, template or pod and keeps the order's indexes true.
func (in *Inputs) Remove(ref Ref) {
	switch ref.Kind {
	case ClaimRef:
		in.Claims = slices.Delete(in.Claims, ref.Index, ref.Index+1)
	case TemplateRef:
		in.Templates = slices.Delete(in.Templates, ref.Index, ref.Index+1)
	case PodRef:
		in.Pods = slices.Delete(in.Pods, ref.Index, ref.Index+1)
	}
	var order []Ref
	for _, other := range in.Order {
		switch {
		case other == ref:
			continue
		case other.Kind == ref.Kind && other.Index > ref.Index:
			other.Index--
		}
		order = append(order, other)
	}
	in.Order = order
}

type typeMeta struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []json.RawMessage `json:"items"`
}

// LoadInputs reads files and folders the way dra-allocate does (a folder's *.yaml, *.yml
// and *.json files in name order).
func LoadInputs(paths []string) (*Inputs, error) {
	in := &Inputs{}
	for _, path := range paths {
		files, err := expand(path)
		if err != nil {
			return nil, err
		}
		for _, file := range files {
			if err := in.readFile(file); err != nil {
				return nil, err
			}
		}
	}
	return in, nil
}

func expand(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, entry := range entries {
		name := entry.Name()
		if !entry.IsDir() && (strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") ||
			strings.HasSuffix(name, ".json")) {
			files = append(files, filepath.Join(path, name))
		}
	}
	sort.Strings(files)
	return files, nil
}

func (in *Inputs) readFile(file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for document := 1; ; document++ {
		var raw json.RawMessage
		if err := decoder.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("%s, document %d: %w", file, document, err)
		}
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		if err := in.add(raw); err != nil {
			return fmt.Errorf("%s, document %d: %w", file, document, err)
		}
	}
}

func (in *Inputs) add(raw json.RawMessage) error {
	var meta typeMeta
	if err := json.Unmarshal(raw, &meta); err != nil {
		return err
	}
	switch meta.Kind {
	case "List":
		for _, item := range meta.Items {
			if err := in.add(item); err != nil {
				return err
			}
		}
		return nil
	case "ResourceSlice":
		return decodeInto(raw, meta, "resource.k8s.io/v1", &in.Slices)
	case "DeviceClass":
		return decodeInto(raw, meta, "resource.k8s.io/v1", &in.Classes)
	case "ResourceClaim":
		if err := decodeInto(raw, meta, "resource.k8s.io/v1", &in.Claims); err != nil {
			return err
		}
		in.Order = append(in.Order, Ref{ClaimRef, len(in.Claims) - 1})
		ApplyClaimDefaults(in.Claims[len(in.Claims)-1])
		return nil
	case "ResourceClaimTemplate":
		if err := decodeInto(raw, meta, "resource.k8s.io/v1", &in.Templates); err != nil {
			return err
		}
		in.Order = append(in.Order, Ref{TemplateRef, len(in.Templates) - 1})
		template := in.Templates[len(in.Templates)-1]
		ApplyClaimSpecDefaults(&template.Spec.Spec)
		return nil
	case "Pod":
		if err := decodeInto(raw, meta, "v1", &in.Pods); err != nil {
			return err
		}
		in.Order = append(in.Order, Ref{PodRef, len(in.Pods) - 1})
		return nil
	case "Node":
		return decodeInto(raw, meta, "v1", &in.Nodes)
	}
	return UnsupportedKindError{kind: meta.Kind, apiVersion: meta.APIVersion}
}

// UnsupportedKindError: an input no judge here takes (a Deployment: neither dra-allocate nor the
// scheduler places it).
type UnsupportedKindError struct{ kind, apiVersion string }

func (e UnsupportedKindError) Error() string {
	return fmt.Sprintf("kind %s (%s) is not an input of dra-allocate or of the scheduler", e.kind, e.apiVersion)
}

func decodeInto[T any](raw json.RawMessage, meta typeMeta, apiVersion string, into *[]*T) error {
	if meta.APIVersion != apiVersion {
		return fmt.Errorf("%s: apiVersion %q, the oracle reads %q", meta.Kind, meta.APIVersion, apiVersion)
	}
	decoder := json.NewDecoder(bytes.NewReader(raw))
	decoder.DisallowUnknownFields()
	object := new(T)
	if err := decoder.Decode(object); err != nil {
		return fmt.Errorf("%s: %w", meta.Kind, err)
	}
	*into = append(*into, object)
	return nil
}

// ApplyClaimDefaults sets what the API server's defaulting sets on a stored claim
// (k8s.io/kubernetes pkg/apis/resource/v1/defaults.go), which is too big a module to link
// for these few lines: allocationMode ExactCount, count 1, toleration operator Equal.
func ApplyClaimDefaults(claim *resourceapi.ResourceClaim) {
	ApplyClaimSpecDefaults(&claim.Spec)
}

// ApplyClaimSpecDefaults is ApplyClaimDefaults for a claim's spec (a template's spec.spec too).
func ApplyClaimSpecDefaults(spec *resourceapi.ResourceClaimSpec) {
	defaults := func(mode *resourceapi.DeviceAllocationMode, count *int64, tolerations []resourceapi.DeviceToleration) {
		if *mode == "" {
			*mode = resourceapi.DeviceAllocationModeExactCount
		}
		if *mode == resourceapi.DeviceAllocationModeExactCount && *count == 0 {
			*count = 1
		}
		for i := range tolerations {
			if tolerations[i].Operator == "" {
				tolerations[i].Operator = resourceapi.DeviceTolerationOpEqual
			}
		}
	}
	for i := range spec.Devices.Requests {
		request := &spec.Devices.Requests[i]
		if request.Exactly != nil {
			defaults(&request.Exactly.AllocationMode, &request.Exactly.Count, request.Exactly.Tolerations)
		}
		for j := range request.FirstAvailable {
			sub := &request.FirstAvailable[j]
			defaults(&sub.AllocationMode, &sub.Count, sub.Tolerations)
		}
	}
}
