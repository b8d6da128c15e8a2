package main

import (
	"errors"
	"runtime/debug"
	"strings"
)

// errHelp is returned by parseArgs for --help after a command.
var errHelp = errors.New("help requested")

// parsedArgs holds a command's flags (boolean ones map to "true", repeated ones keep every
// value in order) and its positional arguments.
type parsedArgs struct {
	values     map[string][]string
	positional []string
}

func (p parsedArgs) has(name string) bool { return len(p.values[name]) > 0 }

func (p parsedArgs) last(name string) string {
	v := p.values[name]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// parseArgs accepts --name, --name VALUE and --name=VALUE (one or two leading dashes), flags and
// positional arguments in any order, and "--" before positional arguments that start with '-'.
func parseArgs(args []string, boolFlags, valueFlags []string) (parsedArgs, error) {
	isBool := map[string]bool{}
	for _, f := range boolFlags {
		isBool[f] = true
	}
	isValue := map[string]bool{}
	for _, f := range valueFlags {
		isValue[f] = true
	}
	out := parsedArgs{values: map[string][]string{}}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			out.positional = append(out.positional, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			out.positional = append(out.positional, arg)
			continue
		}
		name := strings.TrimLeft(arg, "-")
		value, hasValue := "", false
		if eq := strings.IndexByte(name, '='); eq >= 0 {
			name, value, hasValue = name[:eq], name[eq+1:], true
		}
		switch {
		case name == "h" || name == "help":
			return out, errHelp
		case isBool[name]:
			if hasValue {
				return out, usagef("--%s takes no value", name)
			}
			out.values[name] = append(out.values[name], "true")
		case isValue[name]:
			if !hasValue {
				if i+1 >= len(args) {
					return out, usagef("--%s needs a value", name)
				}
				i++
				value = args[i]
			}
			if value == "" {
				return out, usagef("--%s needs a non-empty value", name)
			}
			out.values[name] = append(out.values[name], value)
		default:
			return out, usagef("unknown option %q", arg)
		}
	}
	return out, nil
}

const (
	cdiModule     = "tags.cncf.io/container-device-interface"
	specsModule   = "tags.cncf.io/container-device-interface/specs-go"
	runtimeModule = "github.com/opencontainers/runtime-spec"
)

// moduleVersions returns the versions of the modules this binary was built with, from the
// build information the Go linker embeds ("unknown" when it is missing).
func moduleVersions() map[string]string {
	out := map[string]string{cdiModule: "unknown", specsModule: "unknown", runtimeModule: "unknown"}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return out
	}
	for _, dep := range info.Deps {
		module := dep
		if dep.Replace != nil {
			module = dep.Replace
		}
		if _, wanted := out[dep.Path]; wanted {
			out[dep.Path] = module.Version
		}
	}
	return out
}

func versionText() string {
	v := moduleVersions()
	return cdiModule + " " + v[cdiModule] + "\n" +
		specsModule + " " + v[specsModule] + " (CDI spec versions up to " + latestSpecVersion() + ")\n" +
		runtimeModule + " " + v[runtimeModule] + "\n" +
		"JSON schema: " + schemaCheckerVersion()
}
