package trigger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Input keys of Fingerprint.Inputs. A run records them (AnnotInputs) so
// the next run can say what changed by name, which the parts' hashes
// alone cannot.
const (
	inputMC         = "mc/"
	inputMCs        = "machineconfigs" // their count, when the names were too long to keep
	inputBase       = "base"
	inputExtensions = "extensions"
	inputModuleDay0 = "moduleday0"
	inputPipeline   = "pipeline"
	inputFormats    = "formats"
	inputRebuild    = "rebuild"

	// maxInputsBytes keeps the annotation well inside the apiserver's 256 KiB
	// for all of an object's annotations; a pool with more MachineConfigs
	// than fit records their part's hash and changes read "MachineConfigs
	// changed" without names.
	maxInputsBytes = 64 << 10
	// namesShown caps the MachineConfig names per kind of change in the
	// one-line description.
	namesShown = 3

	// changesFirst and changesSame are what Describe says of a pool's first
	// run and of a run of unchanged inputs.
	changesFirst = "first run for this pool"
	changesSame  = "same inputs, run again"
)

// encodeInputs keeps the inputs in one annotation, as compact JSON on one
// line: a multi-line value breaks the Annotations block `tkn pr describe`
// prints, and JSON's object keys come sorted (encoding/json sorts map
// keys), so equal inputs give equal annotations.
func encodeInputs(in map[string]string) string {
	if s := compactJSON(in); len(s) <= maxInputsBytes {
		return s
	}
	short := map[string]string{}
	n := 0
	for k, v := range in {
		if strings.HasPrefix(k, inputMC) {
			n++
			continue
		}
		short[k] = v
	}
	short[inputMCs] = strconv.Itoa(n)
	return compactJSON(short)
}

func compactJSON(m map[string]string) string {
	// A map of strings always encodes; HTML escaping is off so image
	// references read as they are.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(m)
	return strings.TrimSuffix(b.String(), "\n")
}

// decodeInputs reads the annotation: a JSON object, or the key=value
// lines older kiln releases wrote, so a pool's first run after an upgrade
// still names what changed. Anything else reads as no inputs.
func decodeInputs(s string) map[string]string {
	if s == "" {
		return nil
	}
	if strings.HasPrefix(s, "{") {
		var m map[string]string
		if json.Unmarshal([]byte(s), &m) != nil {
			return nil
		}
		return m
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		k, v, _ := strings.Cut(line, "=")
		m[k] = v
	}
	return m
}

// Describe says in one line what changed from a previous run's recorded
// parts and inputs to f: the MachineConfigs added, removed or edited by
// name, the base image change, the ModuleDay0 change. prevParts nil means
// the pool's first run. A previous run that recorded no inputs (made by an
// older kiln) is described from its parts, without names.
func (f Fingerprint) Describe(prevParts map[Part]string, prevInputs map[string]string) string {
	if prevParts == nil {
		return changesFirst
	}
	var out []string
	for _, p := range partOrder {
		if prevParts[p] == f.Parts[p] {
			continue
		}
		if prevInputs == nil {
			out = append(out, string(p)+" changed")
			continue
		}
		out = append(out, describePart(p, prevInputs, f.Inputs)...)
	}
	if len(out) == 0 {
		return changesSame
	}
	return strings.Join(out, "; ")
}

func describePart(p Part, prev, cur map[string]string) []string {
	switch p {
	case PartManual:
		return []string{fmt.Sprintf("rebuild requested (%s=%q)", AnnotRebuild, cur[inputRebuild])}
	case PartPipeline:
		if prev[inputPipeline] != cur[inputPipeline] {
			return []string{fmt.Sprintf("pipeline version %s -> %s", orDash(prev[inputPipeline]), orDash(cur[inputPipeline]))}
		}
		return []string{"kiln's build formats changed"}
	case PartPayload:
		return append(imageChange("base image", prev[inputBase], cur[inputBase]),
			imageChange("extensions image", prev[inputExtensions], cur[inputExtensions])...)
	case PartModuleDay0:
		return []string{moduleDay0Change(prev[inputModuleDay0], cur[inputModuleDay0])}
	case PartMachineConfigs:
		return []string{machineConfigChange(prev, cur)}
	}
	return nil
}

// imageChange names an image change by short digests: the repository is
// the payload's and rarely what changed.
func imageChange(what, prev, cur string) []string {
	if prev == cur {
		return nil
	}
	return []string{fmt.Sprintf("%s %s -> %s", what, shortImage(prev), shortImage(cur))}
}

func shortImage(ref string) string {
	if ref == "" {
		return "none"
	}
	if _, d, ok := strings.Cut(ref, "@"); ok {
		ref = d
	}
	if len(ref) > len("sha256:")+12 {
		return ref[:len("sha256:")+12]
	}
	return ref
}

// moduleDay0Change: values are "namespace/name@spec-hash".
func moduleDay0Change(prev, cur string) string {
	pn, _, _ := strings.Cut(prev, "@")
	cn, _, _ := strings.Cut(cur, "@")
	switch {
	case prev == "":
		return "ModuleDay0 " + cn + " added"
	case cur == "":
		return "ModuleDay0 " + pn + " removed"
	case pn != cn:
		return "ModuleDay0 " + pn + " replaced by " + cn
	}
	return "ModuleDay0 " + cn + " edited"
}

func machineConfigChange(prev, cur map[string]string) string {
	if _, ok := prev[inputMCs]; ok {
		return "MachineConfigs changed (too many to name)"
	}
	if _, ok := cur[inputMCs]; ok {
		return "MachineConfigs changed (too many to name)"
	}
	var added, removed, edited []string
	for k, v := range cur {
		name, ok := strings.CutPrefix(k, inputMC)
		if !ok {
			continue
		}
		switch pv, had := prev[k]; {
		case !had:
			added = append(added, name)
		case pv != v:
			edited = append(edited, name)
		}
	}
	for k := range prev {
		if name, ok := strings.CutPrefix(k, inputMC); ok {
			if _, has := cur[k]; !has {
				removed = append(removed, name)
			}
		}
	}
	var out []string
	for _, c := range []struct {
		verb  string
		names []string
	}{{"edited", edited}, {"added", added}, {"removed", removed}} {
		if len(c.names) > 0 {
			noun := "MachineConfig "
			if len(c.names) > 1 {
				noun = "MachineConfigs "
			}
			out = append(out, noun+c.verb+" "+nameList(c.names))
		}
	}
	if len(out) == 0 {
		return "MachineConfigs changed"
	}
	return strings.Join(out, "; ")
}

func nameList(names []string) string {
	sort.Strings(names)
	if len(names) <= namesShown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:namesShown], ", "), len(names)-namesShown)
}

// orDash shows an empty value as "-" in a table.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
