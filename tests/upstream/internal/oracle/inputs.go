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
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Inputs is what dra-allocate reads, decoded with upstream's own API types: what the
// API server would have stored, in input order.
type Inputs struct {
	Slices  []*resourceapi.ResourceSlice
	Classes []*resourceapi.DeviceClass
	Claims  []*resourceapi.ResourceClaim
	Nodes   []*v1.Node
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
		ApplyClaimDefaults(in.Claims[len(in.Claims)-1])
		return nil
	case "Node":
		return decodeInto(raw, meta, "v1", &in.Nodes)
	}
	return UnsupportedKindError{kind: meta.Kind, apiVersion: meta.APIVersion}
}

// UnsupportedKindError: an input upstream's allocator library does not take (a Pod or a
// template is the scheduler plugin's business, not the allocator's).
type UnsupportedKindError struct{ kind, apiVersion string }

func (e UnsupportedKindError) Error() string {
	return fmt.Sprintf("kind %s (%s) is not an input of upstream's allocator library", e.kind, e.apiVersion)
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
	for i := range claim.Spec.Devices.Requests {
		request := &claim.Spec.Devices.Requests[i]
		if request.Exactly != nil {
			defaults(&request.Exactly.AllocationMode, &request.Exactly.Count, request.Exactly.Tolerations)
		}
		for j := range request.FirstAvailable {
			sub := &request.FirstAvailable[j]
			defaults(&sub.AllocationMode, &sub.Count, sub.Tolerations)
		}
	}
}
