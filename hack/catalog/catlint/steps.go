package catlint

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
)

// container is one step or sidecar with the params its image may name.
type container struct {
	where    string // e.g. steps[render]
	image    string
	script   string
	env      []envVar
	defaults map[string]string // param name → string default
}

type envVar struct {
	name   string
	secret bool
}

// steps lists every step, sidecar and step template of the resource and of
// every Task a Pipeline embeds, each with its Task's param defaults.
func steps(r *Resource) []container {
	if r.Task != nil {
		return taskContainers("spec.", &r.Task.Spec)
	}
	var out []container
	for _, pt := range append(append([]tektonv1.PipelineTask{}, r.Pipeline.Spec.Tasks...), r.Pipeline.Spec.Finally...) {
		if pt.TaskSpec != nil {
			out = append(out, taskContainers(fmt.Sprintf("spec.tasks[%s].taskSpec.", pt.Name), &pt.TaskSpec.TaskSpec)...)
		}
	}
	return out
}

func taskContainers(prefix string, s *tektonv1.TaskSpec) []container {
	defaults := map[string]string{}
	for _, p := range s.Params {
		if p.Default != nil && p.Default.Type == tektonv1.ParamTypeString {
			defaults[p.Name] = p.Default.StringVal
		}
	}
	var out []container
	for _, st := range s.Steps {
		c := container{where: prefix + "steps[" + st.Name + "]", image: st.Image, script: st.Script, defaults: defaults}
		for _, e := range st.Env {
			c.env = append(c.env, envVar{e.Name, e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil})
		}
		for _, e := range st.EnvFrom {
			if e.SecretRef != nil {
				c.env = append(c.env, envVar{"envFrom " + e.SecretRef.Name, true})
			}
		}
		out = append(out, c)
	}
	for _, sc := range s.Sidecars {
		c := container{where: prefix + "sidecars[" + sc.Name + "]", image: sc.Image, script: sc.Script, defaults: defaults}
		for _, e := range sc.Env {
			c.env = append(c.env, envVar{e.Name, e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil})
		}
		out = append(out, c)
	}
	if t := s.StepTemplate; t != nil && t.Image != "" {
		out = append(out, container{where: prefix + "stepTemplate", image: t.Image, defaults: defaults})
	}
	return out
}

// paramRE matches $(params.name) and $(params['name']) / $(params["name"]).
var paramRE = regexp.MustCompile(`\$\(params(?:\.([A-Za-z0-9_.-]+)|\[['"]([A-Za-z0-9_.-]+)['"]\])\)`)

// checkStep: the image resolves, no Secret reaches the environment, and a
// script passes shellcheck.
func checkStep(c container) []string {
	var out []string
	if c.image != "" {
		if p := CheckImage(SubstituteParams(c.image, c.defaults)); p != "" {
			out = append(out, fmt.Sprintf("%s: image %q: %s", c.where, c.image, p))
		}
	}
	for _, e := range c.env {
		if e.secret {
			// CIS Kubernetes benchmark 5.4.1, which catlin cites: Secrets as
			// files, not environment variables.
			out = append(out, fmt.Sprintf("%s: env %s comes from a Secret; mount it as a file (a workspace) instead", c.where, e.name))
		}
	}
	if c.script != "" {
		if err := LintScript(c.script); err != nil {
			out = append(out, fmt.Sprintf("%s: script: %v", c.where, err))
		}
	}
	return out
}

// SubstituteParams replaces $(params.x) with x's default, as Tekton does
// when a run leaves the param unset.
func SubstituteParams(s string, defaults map[string]string) string {
	return paramRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := paramRE.FindStringSubmatch(m)
		n := sub[1] + sub[2]
		if v, ok := defaults[n]; ok {
			return v
		}
		return m
	})
}

// CheckImage says what is wrong with an image reference once defaults are
// substituted: a variable left, not fully qualified, no tag or a latest
// tag, or no digest. Empty means it is pinned (registry/repo:tag@sha256:…).
func CheckImage(ref string) string {
	if strings.Contains(ref, "$(") {
		return "names a variable that no param default resolves; a run cannot be checked or pulled without it"
	}
	parsed, err := name.ParseReference(ref, name.StrictValidation)
	if err != nil {
		// Strict: the registry and the tag or digest are written out, no
		// Docker Hub default.
		return fmt.Sprintf("not a fully specified reference: %v", err)
	}
	if _, ok := parsed.(name.Digest); !ok {
		return "not pinned by digest; want repository:tag@sha256:<hex>"
	}
	base, _, _ := strings.Cut(ref, "@")
	tag, err := name.NewTag(base, name.StrictValidation)
	if err != nil {
		return "has a digest but no tag; want repository:tag@sha256:<hex> so that readers see the version"
	}
	if strings.EqualFold(tag.TagStr(), "latest") {
		return "tag latest names no version"
	}
	return ""
}

// shebangRE picks the interpreter of a script; no shebang means sh, as
// Tekton runs such a script.
var shebangRE = regexp.MustCompile(`^#!\s*(?:/usr/bin/env\s+|\S*/)(sh|bash|dash|ksh)\s*\n`)

// LintScript runs Debian's shellcheck, and the shell's own syntax check
// (-n), on a step script. A script in another language is refused: nothing
// here could check it.
func LintScript(script string) error {
	shell := "sh"
	if strings.HasPrefix(script, "#!") {
		m := shebangRE.FindStringSubmatch(script)
		if m == nil {
			first, _, _ := strings.Cut(script, "\n")
			return fmt.Errorf("interpreter %q: only shell scripts can be linted (shellcheck)", first)
		}
		shell = m[1]
	} else {
		script = "#!/bin/sh\n" + script
	}
	if err := run("shellcheck", script, "-s", shell, "-"); err != nil {
		return err
	}
	sh := shell
	if sh == "sh" || sh == "dash" {
		sh = "dash" // Debian's /bin/sh
	}
	return run(sh, script, "-n")
}

func run(cmd, stdin string, args ...string) error {
	c := exec.Command(cmd, args...)
	c.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Run(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", cmd, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

// LintShellFile runs shellcheck on a shell file (a tests/ hook), which the
// catalog's CI sources with bash.
func LintShellFile(file string) error {
	return run("shellcheck", "", "-s", "bash", file)
}
