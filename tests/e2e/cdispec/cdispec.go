// Package cdispec reads the CDI specs the driver writes, as far as the end-to-end tiers check
// them (the control-plane tier's podman runs and the node tier's pods).
package cdispec

import (
	"encoding/json"
	"fmt"
	"os"
)

// Edits is the part of a CDI spec's containerEdits the checks read.
type Edits struct {
	Env         []string `json:"env"`
	DeviceNodes []struct {
		Path     string  `json:"path"`
		HostPath string  `json:"hostPath"`
		Type     string  `json:"type"`
		Major    *uint64 `json:"major"`
		Minor    *uint64 `json:"minor"`
	} `json:"deviceNodes"`
	Mounts []struct {
		HostPath      string   `json:"hostPath"`
		ContainerPath string   `json:"containerPath"`
		Options       []string `json:"options"`
	} `json:"mounts"`
}

// Add appends other's edits to e, as a runtime applies several devices' edits to one container.
func (e *Edits) Add(other Edits) {
	e.Env = append(e.Env, other.Env...)
	e.DeviceNodes = append(e.DeviceNodes, other.DeviceNodes...)
	e.Mounts = append(e.Mounts, other.Mounts...)
}

// Spec is a CDI spec file: its kind, its devices' edits and the spec-wide edits.
type Spec struct {
	Kind    string `json:"kind"`
	Devices []struct {
		Name           string `json:"name"`
		ContainerEdits Edits  `json:"containerEdits"`
	} `json:"devices"`
	ContainerEdits Edits `json:"containerEdits"`
}

// Read parses the spec in file, naming the file in its error.
func Read(file string) (Spec, error) {
	var spec Spec
	data, err := os.ReadFile(file)
	if err != nil {
		return spec, err
	}
	if err := json.Unmarshal(data, &spec); err != nil {
		return spec, fmt.Errorf("CDI spec %s: %w", file, err)
	}
	return spec, nil
}
