package bootimage

import (
	"bytes"
	"encoding/json"
	"fmt"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

// ProviderSpec is a MachineSet's providerSpec.value, held twice: as the
// platform's Go type (to read it) and as generic JSON (to edit it). Edits go
// to the generic form so that fields the Go type does not know survive a
// patch untouched.
type ProviderSpec struct {
	Raw     []byte
	Generic map[string]any
}

// DecodeProviderSpec reads a MachineSet's providerSpec.value into out (a
// pointer to a platform's provider spec type) and returns both forms.
func DecodeProviderSpec(ms *machinev1beta1.MachineSet, out any) (*ProviderSpec, error) {
	v := ms.Spec.Template.Spec.ProviderSpec.Value
	if v == nil || len(bytes.TrimSpace(v.Raw)) == 0 {
		return nil, fmt.Errorf("MachineSet %s/%s spec.template.spec.providerSpec.value: empty", ms.Namespace, ms.Name)
	}
	return decodeRaw(ms.Namespace+"/"+ms.Name, v.Raw, out)
}

func decodeRaw(name string, raw []byte, out any) (*ProviderSpec, error) {
	field := "spec.template.spec.providerSpec.value"
	generic := map[string]any{}
	if err := json.Unmarshal(raw, &generic); err != nil {
		return nil, fmt.Errorf("MachineSet %s %s: not a JSON object: %w", name, field, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("MachineSet %s %s: decoding as %T: %w", name, field, out, err)
	}
	return &ProviderSpec{Raw: raw, Generic: generic}, nil
}

// Edit sets one field of the providerSpec. Path elements are object keys
// (string) and array indexes (int).
type Edit struct {
	Path  []any
	Value any
}

func (e Edit) String() string {
	s := ""
	for _, p := range e.Path {
		switch p := p.(type) {
		case int:
			s += fmt.Sprintf("[%d]", p)
		default:
			if s != "" {
				s += "."
			}
			s += fmt.Sprint(p)
		}
	}
	return s
}

// Apply returns the providerSpec JSON with the edits applied, leaving p
// unchanged.
func (p *ProviderSpec) Apply(edits []Edit) ([]byte, error) {
	doc, err := deepCopyJSON(p.Generic)
	if err != nil {
		return nil, err
	}
	for _, e := range edits {
		if err := setPath(doc, e.Path, e.Value); err != nil {
			return nil, fmt.Errorf("editing providerSpec %s: %w", e, err)
		}
	}
	return json.Marshal(doc)
}

func deepCopyJSON(m map[string]any) (map[string]any, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	return out, json.Unmarshal(b, &out)
}

func setPath(node any, path []any, value any) error {
	if len(path) == 0 {
		return fmt.Errorf("empty path")
	}
	for i, p := range path {
		last := i == len(path)-1
		switch k := p.(type) {
		case string:
			m, ok := node.(map[string]any)
			if !ok {
				return fmt.Errorf("%v is not an object", path[:i])
			}
			if last {
				m[k] = value
				return nil
			}
			next, ok := m[k]
			if !ok || next == nil {
				next = map[string]any{}
				m[k] = next
			}
			node = next
		case int:
			a, ok := node.([]any)
			if !ok || k < 0 || k >= len(a) {
				return fmt.Errorf("%v has no element %d", path[:i], k)
			}
			if last {
				a[k] = value
				return nil
			}
			node = a[k]
		default:
			return fmt.Errorf("path element %v is neither key nor index", p)
		}
	}
	return nil
}
