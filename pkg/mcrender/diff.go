package mcrender

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"sigs.k8s.io/yaml"

	"github.com/kiln-dev/kiln/pkg/ignres"
	"github.com/kiln-dev/kiln/pkg/work"
)

const absent = "(absent)"

// CompareRendered diffs kiln's prediction with MCO's rendered config.
// mcoInputs are the MachineConfigs MCO merged (the pool's
// spec.configuration.source, read from the cluster), for blame.
func CompareRendered(p *Prediction, mco *mcfgv1.MachineConfig, mcoInputs []*mcfgv1.MachineConfig) (*work.Drift, error) {
	d := &work.Drift{Pool: p.Config.Labels[PoolLabel], Predicted: p.Config.Name, Rendered: mco.Name}
	kt, err := specTree(p.Config.Spec)
	if err != nil {
		return nil, fmt.Errorf("normalising kiln's predicted config %s: %w", p.Config.Name, err)
	}
	mt, err := specTree(mco.Spec)
	if err != nil {
		return nil, fmt.Errorf("normalising MCO's rendered config %s: %w", mco.Name, err)
	}
	walk(&d.Differences, "spec", kt, mt)
	d.OnlyKiln, d.OnlyMCO = onlyIn(p.Inputs, mcoInputs), onlyIn(mcoInputs, p.Inputs)
	for _, k := range []string{ReleaseVersionAnnotation, GeneratedByAnnotation, OverriddenAnnotation} {
		kv, kok := p.Config.Annotations[k]
		mv, mok := mco.Annotations[k]
		if kok && mok && kv != mv || k == OverriddenAnnotation && kok != mok {
			d.Annotations = append(d.Annotations, work.Difference{Path: "metadata.annotations[" + k + "]", Kind: "field", Kiln: orAbsent(kv, kok), MCO: orAbsent(mv, mok)})
		}
	}
	if err := blameDrift(d, p.Inputs, mcoInputs); err != nil {
		return nil, err
	}
	d.SpecsEqual = len(d.Differences) == 0
	d.Cause = driftCause(d, p.Config.Spec, mco.Spec)
	return d, nil
}

func orAbsent(v string, ok bool) string {
	if !ok {
		return absent
	}
	return v
}

// driftCause explains the difference in one sentence.
func driftCause(d *work.Drift, kiln, mco mcfgv1.MachineConfigSpec) string {
	if !d.SpecsEqual {
		f := d.Differences[0]
		s := fmt.Sprintf("the rendered specs differ: first at %s (%s): kiln %s, MCO %s", f.Path, f.Kind, f.Kiln, f.MCO)
		if f.SetBy != "" {
			s += "; kiln's value is set by MachineConfig " + f.SetBy
		}
		if len(f.SetByMCOOnly) > 0 {
			s += "; MCO also merged " + strings.Join(f.SetByMCOOnly, ", ") + ", which kiln did not"
		}
		return s
	}
	// Equal after normalisation: MCO hashed other bytes for the same
	// content, or hashes differently.
	ky, _ := yaml.Marshal(kiln)
	my, _ := yaml.Marshal(mco)
	if string(ky) == string(my) {
		return "the names differ but the specs are byte-identical: MCO's name rule (salt or encoding of the hash) is not the one kiln knows"
	}
	kl, ml := firstDifferentLine(string(ky), string(my))
	s := fmt.Sprintf("the names differ but the specs are equal after normalisation: MCO hashed another encoding of the same config (first differing line of the hashed YAML: kiln %q, MCO %q)", kl, ml)
	for _, a := range d.Annotations {
		s += fmt.Sprintf("; %s: kiln %s, MCO %s", a.Path, a.Kiln, a.MCO)
	}
	return s
}

func firstDifferentLine(a, b string) (string, string) {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(al), len(bl)) {
		x, y := absent, absent
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return strings.TrimSpace(x), strings.TrimSpace(y)
		}
	}
	return "", ""
}

// specTree is the spec as a JSON tree with spec.config parsed to
// Ignition 3.5 (so a 3.4 and a 3.5 config of the same content compare
// equal), the normal form both sides are compared in.
func specTree(spec mcfgv1.MachineConfigSpec) (map[string]any, error) {
	var cfg any = map[string]any{}
	if len(spec.Config.Raw) > 0 {
		c, err := parseConfig(spec.Config.Raw)
		if err != nil {
			return nil, err
		}
		raw, err := marshalConfig(c)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return nil, err
		}
	}
	spec.Config.Raw = nil
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	var t map[string]any
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, err
	}
	t["config"] = cfg
	return t, nil
}

// walk appends the differences between a and b under path.
func walk(out *[]work.Difference, path string, a, b any) {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := map[string]bool{}
		for k := range av {
			keys[k] = true
		}
		for k := range bv {
			keys[k] = true
		}
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range keys {
				if !yield(k) {
					return
				}
			}
		}) {
			x, xok := av[k]
			y, yok := bv[k]
			// Descend into a section one side lacks, so the difference
			// names the file or unit, not the whole section.
			if !xok {
				x, xok = emptyLike(y)
			}
			if !yok {
				y, yok = emptyLike(x)
			}
			switch {
			case !xok && isEmpty(y), !yok && isEmpty(x):
			case !xok || !yok:
				*out = append(*out, newDifference(path+"."+k, x, xok, y, yok))
			default:
				walk(out, path+"."+k, x, y)
			}
		}
		return
	case []any:
		bv, ok := b.([]any)
		if !ok {
			break
		}
		walkList(out, path, av, bv)
		return
	}
	if !jsonEqual(a, b) {
		*out = append(*out, newDifference(path, a, true, b, true))
	}
}

// walkList compares lists of objects by their path or name (Ignition's
// own merge keys for files, units, users, …), lists of strings (kernel
// arguments, extensions) as multisets and then by order, others by index.
func walkList(out *[]work.Difference, path string, a, b []any) {
	ka, kb := keyed(a), keyed(b)
	if ka == nil && len(a) == 0 && kb != nil {
		ka = &keyedList{items: map[string]any{}}
	}
	if kb == nil && len(b) == 0 && ka != nil {
		kb = &keyedList{items: map[string]any{}}
	}
	if ka != nil && kb != nil {
		order := slices.Clone(ka.order)
		for _, k := range kb.order {
			if _, seen := ka.items[k]; !seen {
				order = append(order, k)
			}
		}
		for _, k := range order {
			x, xok := ka.items[k]
			y, yok := kb.items[k]
			p := path + "[" + k + "]"
			if !xok || !yok {
				*out = append(*out, newDifference(p, x, xok, y, yok))
				continue
			}
			walk(out, p, x, y)
		}
		return
	}
	if sa, sb := strs(a), strs(b); sa != nil && sb != nil {
		walkStrings(out, path, sa, sb)
		return
	}
	for i := range max(len(a), len(b)) {
		p := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case i >= len(a):
			*out = append(*out, newDifference(p, nil, false, b[i], true))
		case i >= len(b):
			*out = append(*out, newDifference(p, a[i], true, nil, false))
		default:
			walk(out, p, a[i], b[i])
		}
	}
}

// walkStrings: a value one side has more often than the other is a
// difference at path[value]; the same values in another order is one
// difference of the whole list (kernel arguments apply in order).
func walkStrings(out *[]work.Difference, path string, a, b []string) {
	count := func(s []string) map[string]int {
		m := map[string]int{}
		for _, v := range s {
			m[v]++
		}
		return m
	}
	ca, cb := count(a), count(b)
	n := len(*out)
	for _, v := range append(slices.Clone(a), b...) {
		if ca[v] == cb[v] {
			continue
		}
		x, y := strings.Repeat(v+" ", ca[v]), strings.Repeat(v+" ", cb[v])
		*out = append(*out, work.Difference{Path: path + "[" + v + "]", Kind: kindOf(path), Kiln: listOr(x), MCO: listOr(y)})
		ca[v], cb[v] = 0, 0
	}
	if len(*out) == n && !slices.Equal(a, b) {
		*out = append(*out, work.Difference{Path: path, Kind: kindOf(path) + " order", Kiln: jsonString(a), MCO: jsonString(b)})
	}
}

func listOr(s string) string {
	if s = strings.TrimSpace(s); s == "" {
		return absent
	}
	return fmt.Sprintf("%q", s)
}

type keyedList struct {
	order []string
	items map[string]any
}

// keyed indexes a list of objects by "path", else "name"; nil when the
// list is not such a list.
func keyed(l []any) *keyedList {
	if len(l) == 0 {
		return nil
	}
	kl := &keyedList{items: map[string]any{}}
	for _, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			return nil
		}
		k, ok := m["path"].(string)
		if !ok {
			if k, ok = m["name"].(string); !ok {
				return nil
			}
		}
		if _, dup := kl.items[k]; dup {
			return nil
		}
		kl.order = append(kl.order, k)
		kl.items[k] = e
	}
	return kl
}

func strs(l []any) []string {
	out := make([]string, 0, len(l))
	for _, e := range l {
		s, ok := e.(string)
		if !ok {
			return nil
		}
		out = append(out, s)
	}
	return out
}

// emptyLike is an empty map or list for a map or list, else absent.
func emptyLike(v any) (any, bool) {
	switch v.(type) {
	case map[string]any:
		return map[string]any{}, true
	case []any:
		return []any{}, true
	}
	return nil, false
}

func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case bool:
		return !t
	case []any:
		return len(t) == 0
	case map[string]any:
		return len(t) == 0
	}
	return false
}

func jsonEqual(a, b any) bool { return jsonString(a) == jsonString(b) }

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func newDifference(path string, a any, aok bool, b any, bok bool) work.Difference {
	return work.Difference{Path: path, Kind: kindOf(path), Kiln: show(path, a, aok), MCO: show(path, b, bok)}
}

// show prints a value; a data: URL's content is shown decoded, long values
// are cut.
func show(path string, v any, ok bool) string {
	if !ok {
		return absent
	}
	if s, isStr := v.(string); isStr && strings.HasPrefix(s, "data:") && strings.HasSuffix(path, ".source") {
		if b, err := ignres.DataURL(s); err == nil {
			return cut(fmt.Sprintf("%q (data: URL, decoded)", b))
		}
	}
	return cut(jsonString(v))
}

func cut(s string) string {
	const limit = 240
	if len(s) <= limit {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:limit], len(s))
}

func kindOf(path string) string {
	switch {
	case strings.Contains(path, "storage.files["):
		return "file"
	case strings.Contains(path, "systemd.units["):
		return "unit"
	case strings.Contains(path, "kernelArguments"):
		return "kernel argument"
	case strings.Contains(path, "spec.extensions"):
		return "extension"
	}
	return "field"
}

// blameDrift fills SetBy and SetByMCOOnly from the inputs' own normal forms.
func blameDrift(d *work.Drift, kiln, mco []*mcfgv1.MachineConfig) error {
	trees := map[string]map[string]any{}
	tree := func(mc *mcfgv1.MachineConfig) (map[string]any, error) {
		if t, ok := trees[mc.Name]; ok {
			return t, nil
		}
		t, err := specTree(mc.Spec)
		if err != nil {
			return nil, fmt.Errorf("MachineConfig %q: spec.config: %w", mc.Name, err)
		}
		trees[mc.Name] = t
		return t, nil
	}
	kilnNames := map[string]bool{}
	for _, mc := range kiln {
		kilnNames[mc.Name] = true
	}
	for i := range d.Differences {
		f := &d.Differences[i]
		for _, mc := range kiln {
			t, err := tree(mc)
			if err != nil {
				return err
			}
			if sets(t, f.Path) {
				f.SetBy = mc.Name
			}
		}
		for _, mc := range mco {
			if kilnNames[mc.Name] {
				continue
			}
			t, err := tree(mc)
			if err != nil {
				return err
			}
			if sets(t, f.Path) {
				f.SetByMCOOnly = append(f.SetByMCOOnly, mc.Name)
			}
		}
	}
	return nil
}

// sets reports whether an input's tree has a non-empty value at path (for
// path[value] of a string list: has that value; for a list's order: has
// any entry).
func sets(t map[string]any, path string) bool {
	segs := splitPath(strings.TrimPrefix(path, "spec."))
	var cur any = t
	for _, s := range segs {
		name, key, hasKey := strings.Cut(s, "[")
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[name]; !ok {
			return false
		}
		if !hasKey {
			continue
		}
		key = strings.TrimSuffix(key, "]")
		l, ok := cur.([]any)
		if !ok {
			return false
		}
		if ss := strs(l); ss != nil {
			return slices.Contains(ss, key)
		}
		if kl := keyed(l); kl != nil {
			if cur, ok = kl.items[key]; !ok {
				return false
			}
			continue
		}
		return false
	}
	return !isEmpty(cur)
}

// splitPath splits at dots outside brackets (paths and names may hold dots).
func splitPath(p string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range p {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case '.':
			if depth == 0 {
				out = append(out, p[start:i])
				start = i + 1
			}
		}
	}
	return append(out, p[start:])
}

func onlyIn(a, b []*mcfgv1.MachineConfig) []string {
	in := map[string]bool{}
	for _, mc := range b {
		in[mc.Name] = true
	}
	var out []string
	for _, mc := range a {
		if !in[mc.Name] {
			out = append(out, mc.Name)
		}
	}
	sort.Strings(out)
	return out
}
