package install

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Grant is one verb on one resource that an RBAC rule gives a subject.
type Grant struct {
	// Source names the role, e.g. "Role openshift-machine-api/kiln-bootimages".
	Source string
	// Namespace is where the grant holds; "" is every namespace (a
	// ClusterRole bound by a ClusterRoleBinding).
	Namespace string
	APIGroup  string
	// Resource is "resource" or "resource/subresource".
	Resource string
	Verb     string
	// Names are the rule's resourceNames; empty allows any name.
	Names []string
}

// Key identifies the grant in allow-lists: "verb resource[.group] ns=NS".
func (g Grant) Key() string {
	res := g.Resource
	if g.APIGroup != "" {
		res += "." + g.APIGroup
	}
	return fmt.Sprintf("%s %s ns=%s", g.Verb, res, g.Namespace)
}

// Allows reports whether the grant authorizes r.
func (g Grant) Allows(r Request) bool {
	res := r.Resource
	if r.Subresource != "" {
		res += "/" + r.Subresource
	}
	return g.Verb == r.Verb && g.APIGroup == r.APIGroup && g.Resource == res &&
		(g.Namespace == "" || g.Namespace == r.Namespace) &&
		(len(g.Names) == 0 || slices.Contains(g.Names, r.Name))
}

// Grants returns everything the rendered objects grant the ServiceAccount
// namespace/name, one Grant per (rule, group, resource, verb). A wildcard
// anywhere in a rule kiln grants is an error: least privilege names things.
func Grants(objs []*unstructured.Unstructured, namespace, name string) ([]Grant, error) {
	roles := map[string]rbacv1.Role{}
	clusterRoles := map[string]rbacv1.ClusterRole{}
	var rbs []rbacv1.RoleBinding
	var crbs []rbacv1.ClusterRoleBinding
	for _, o := range objs {
		var err error
		switch o.GetKind() {
		case "Role":
			var r rbacv1.Role
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &r)
			roles[r.Namespace+"/"+r.Name] = r
		case "ClusterRole":
			var r rbacv1.ClusterRole
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &r)
			clusterRoles[r.Name] = r
		case "RoleBinding":
			var b rbacv1.RoleBinding
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &b)
			rbs = append(rbs, b)
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &b)
			crbs = append(crbs, b)
		}
		if err != nil {
			return nil, fmt.Errorf("decoding %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	isSubject := func(subjects []rbacv1.Subject) bool {
		return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Namespace == namespace && s.Name == name
		})
	}
	var out []Grant
	add := func(source, ns string, rules []rbacv1.PolicyRule) error {
		for i, r := range rules {
			if len(r.NonResourceURLs) > 0 {
				return fmt.Errorf("%s rules[%d]: nonResourceURLs are not used by kiln", source, i)
			}
			for _, list := range [][]string{r.APIGroups, r.Resources, r.Verbs} {
				if len(list) == 0 || slices.Contains(list, "*") {
					return fmt.Errorf("%s rules[%d]: empty or wildcard apiGroups/resources/verbs", source, i)
				}
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						out = append(out, Grant{Source: source, Namespace: ns, APIGroup: g, Resource: res, Verb: v, Names: r.ResourceNames})
					}
				}
			}
		}
		return nil
	}
	for _, b := range crbs {
		if !isSubject(b.Subjects) {
			continue
		}
		cr, ok := clusterRoles[b.RoleRef.Name]
		if b.RoleRef.Kind != "ClusterRole" || !ok {
			return nil, fmt.Errorf("ClusterRoleBinding %s: roleRef %s %s is not rendered", b.Name, b.RoleRef.Kind, b.RoleRef.Name)
		}
		if err := add("ClusterRole "+cr.Name, "", cr.Rules); err != nil {
			return nil, err
		}
	}
	for _, b := range rbs {
		if !isSubject(b.Subjects) {
			continue
		}
		switch b.RoleRef.Kind {
		case "Role":
			r, ok := roles[b.Namespace+"/"+b.RoleRef.Name]
			if !ok {
				return nil, fmt.Errorf("RoleBinding %s/%s: Role %s is not rendered in that namespace", b.Namespace, b.Name, b.RoleRef.Name)
			}
			if err := add("Role "+b.Namespace+"/"+r.Name, b.Namespace, r.Rules); err != nil {
				return nil, err
			}
		case "ClusterRole":
			cr, ok := clusterRoles[b.RoleRef.Name]
			if !ok {
				return nil, fmt.Errorf("RoleBinding %s/%s: ClusterRole %s is not rendered", b.Namespace, b.Name, b.RoleRef.Name)
			}
			if err := add("ClusterRole "+cr.Name+" in "+b.Namespace, b.Namespace, cr.Rules); err != nil {
				return nil, err
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, nil
}

// Unused returns the grants no request in reqs used, minus those whose
// Key is in allowed (needed but not exercised; the caller says why).
// Requests the apiserver refused (401, 403) use nothing.
func Unused(grants []Grant, reqs []Request, allowed map[string]string) []Grant {
	var out []Grant
	for _, g := range grants {
		if _, ok := allowed[g.Key()]; ok {
			continue
		}
		used := slices.ContainsFunc(reqs, func(r Request) bool {
			return r.Status != 401 && r.Status != 403 && g.Allows(r)
		})
		if !used {
			out = append(out, g)
		}
	}
	return out
}

// Forbidden returns the requests the apiserver refused.
func Forbidden(reqs []Request) []Request {
	var out []Request
	for _, r := range reqs {
		if r.Status == 401 || r.Status == 403 {
			out = append(out, r)
		}
	}
	return out
}

// Describe lists grants one per line.
func Describe(gs []Grant) string {
	var b strings.Builder
	for _, g := range gs {
		fmt.Fprintf(&b, "  %s (%s", g.Key(), g.Source)
		if len(g.Names) > 0 {
			fmt.Fprintf(&b, ", names %v", g.Names)
		}
		b.WriteString(")\n")
	}
	return b.String()
}
