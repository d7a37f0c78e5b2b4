package reproduce

import (
	"encoding/json"
	"fmt"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// compareConfigs lists every config value that differs. The config JSON
// is flattened to one value per path (created, config.Cmd[0],
// history[3].created_by), with labels as "label KEY" and env entries as
// "env NAME"; rootfs.diff_ids is left out because the layers say it.
func compareConfigs(d *Diff, img, rebuilt v1.Image) error {
	a, err := img.RawConfigFile()
	if err != nil {
		return fmt.Errorf("reading the config of the image: %w", err)
	}
	b, err := rebuilt.RawConfigFile()
	if err != nil {
		return fmt.Errorf("reading the config of the rebuild: %w", err)
	}
	fa, err := flattenConfig(a)
	if err != nil {
		return fmt.Errorf("decoding the config of the image: %w", err)
	}
	fb, err := flattenConfig(b)
	if err != nil {
		return fmt.Errorf("decoding the config of the rebuild: %w", err)
	}
	d.Config = appendFlat(d.Config, fa, fb)
	return nil
}

// appendFlat adds every flattened path whose value differs, labels and
// env first, then the rest, each in path order.
func appendFlat(fs []FieldDiff, a, b map[string]string) []FieldDiff {
	all := appendMap(nil, "", a, b)
	for _, group := range []func(string) bool{
		func(k string) bool { return strings.HasPrefix(k, "label ") },
		func(k string) bool { return strings.HasPrefix(k, "env ") },
		func(k string) bool { return strings.HasPrefix(k, "history") },
		func(k string) bool {
			return !strings.HasPrefix(k, "label ") && !strings.HasPrefix(k, "env ") && !strings.HasPrefix(k, "history")
		},
	} {
		for _, f := range all {
			if group(f.Field) {
				fs = append(fs, f)
			}
		}
	}
	return fs
}

func flattenConfig(raw []byte) (map[string]string, error) {
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, err
	}
	out := map[string]string{}
	if rootfs, ok := cfg["rootfs"].(map[string]any); ok {
		delete(rootfs, "diff_ids")
	}
	if c, ok := cfg["config"].(map[string]any); ok {
		if labels, ok := c["Labels"].(map[string]any); ok {
			for k, v := range labels {
				out["label "+k] = fmt.Sprint(v)
			}
			delete(c, "Labels")
		}
		if env, ok := c["Env"].([]any); ok {
			for _, e := range env {
				k, v, _ := strings.Cut(fmt.Sprint(e), "=")
				out["env "+k] = v
			}
			delete(c, "Env")
		}
	}
	flatten("", cfg, out)
	return out, nil
}

// flatten writes every leaf of v under its path; an empty object or list
// is a leaf of its own ("{}", "[]") so that it differs from a missing one.
func flatten(prefix string, v any, out map[string]string) {
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 && prefix != "" {
			out[prefix] = "{}"
		}
		for k, c := range t {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flatten(p, c, out)
		}
	case []any:
		if len(t) == 0 {
			out[prefix] = "[]"
		}
		for i, c := range t {
			flatten(fmt.Sprintf("%s[%d]", prefix, i), c, out)
		}
	case string:
		out[prefix] = t
	default:
		b, _ := json.Marshal(t)
		out[prefix] = string(b)
	}
}
