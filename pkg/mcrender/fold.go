package mcrender

import (
	"reflect"

	ign35 "github.com/coreos/ignition/v2/config/v3_5"
	ign35types "github.com/coreos/ignition/v2/config/v3_5/types"
)

// fold merges children into base in order, each child over everything
// before it: MCO's left fold. Ignition's merge records a transcript of
// every leaf of the parent, so the left fold costs O(total²); with 1000
// MCs and 10,000 files that is minutes. When the configs stay inside what
// the merge is associative for, fold merges the children as a balanced
// tree instead — the same result (TestFoldTreeEqualsLinear and FuzzRender
// check it) in O(total·log n).
func fold(base ign35types.Config, children []ign35types.Config) ign35types.Config {
	if len(children) == 0 {
		return base
	}
	if !associative(append([]ign35types.Config{base}, children...)) {
		return foldLinear(base, children)
	}
	return mergeStep(base, foldTree(children))
}

func foldLinear(base ign35types.Config, children []ign35types.Config) ign35types.Config {
	out := base
	for _, c := range children {
		out = mergeStep(out, c)
	}
	return out
}

func foldTree(cs []ign35types.Config) ign35types.Config {
	if len(cs) == 1 {
		return cs[0]
	}
	mid := len(cs) / 2
	return mergeStep(foldTree(cs[:mid]), foldTree(cs[mid:]))
}

// mergeStep is one of MCO's merges: Ignition merges compression and
// contents separately, so a later uncompressed file would keep an earlier
// gzip flag. An explicit "" on the child overrides it; "" becomes nil again
// after the merge (MCO's fix for coreos/butane#332).
func mergeStep(parent, child ign35types.Config) ign35types.Config {
	child.Storage.Files = append([]ign35types.File(nil), child.Storage.Files...)
	compressionToEmpty(&child)
	out := ign35.Merge(parent, child)
	compressionToNil(&out)
	return out
}

// associative reports whether Ignition's merge is associative over cs.
// Two rules of the merge are not: an entry of one list cancels an entry
// with the same key in a sibling list (a path that is a file in one config
// and a directory or link in another; a kernel argument both in
// shouldExist and shouldNotExist), and an HTTP header without a value
// deletes the parent's header, which moves it within its list.
func associative(cs []ign35types.Config) bool {
	kind := map[string]string{}
	karg := map[string]string{}
	same := func(m map[string]string, key, list string) bool {
		if prev, ok := m[key]; ok && prev != list {
			return false
		}
		m[key] = list
		return true
	}
	for _, c := range cs {
		for _, f := range c.Storage.Files {
			if !same(kind, f.Path, "file") {
				return false
			}
		}
		for _, d := range c.Storage.Directories {
			if !same(kind, d.Path, "dir") {
				return false
			}
		}
		for _, l := range c.Storage.Links {
			if !same(kind, l.Path, "link") {
				return false
			}
		}
		for _, k := range c.KernelArguments.ShouldExist {
			if !same(karg, string(k), "exist") {
				return false
			}
		}
		for _, k := range c.KernelArguments.ShouldNotExist {
			if !same(karg, string(k), "notexist") {
				return false
			}
		}
		if hasHeaders(reflect.ValueOf(c)) {
			return false
		}
	}
	return true
}

var headersType = reflect.TypeOf(ign35types.HTTPHeaders{})

// hasHeaders walks v for a non-empty HTTPHeaders list.
func hasHeaders(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Ptr:
		return !v.IsNil() && hasHeaders(v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if hasHeaders(v.Field(i)) {
				return true
			}
		}
	case reflect.Slice:
		if v.Type() == headersType {
			return v.Len() > 0
		}
		if k := v.Type().Elem().Kind(); k != reflect.Struct && k != reflect.Ptr {
			return false
		}
		for i := 0; i < v.Len(); i++ {
			if hasHeaders(v.Index(i)) {
				return true
			}
		}
	}
	return false
}
