package manifests_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kiln-dev/kiln/test/env"
)

// apiserverCases are the refused cases a create can carry to a real
// apiserver (the others fail in the client before a request, or on the
// namespace in the URL).
var apiserverCases = map[string]bool{
	"misspelt kind in kiln's group":                    true,
	"unknown version of a kind kiln reads":             true,
	"MachineConfig named like a path":                  true,
	"ModuleDay0 named like a path":                     true,
	"300-character name":                               true,
	"pool named like a path":                           true,
	"invalid label value":                              true,
	"ConfigMap key that is a path":                     true,
	"empty machineConfigPoolSelector":                  true,
	"ModuleDay0 without osMapping":                     true,
	"unsignedImage equal to containerImage (CEL rule)": true,
	"pool pinning an image set named like a path":      true,
}

// TestRefusedAlikeByAPIServer holds the folder reader to a real apiserver
// with kiln's and OpenShift's CRDs: each manifest is created with strict
// field validation, as `kubectl apply --dry-run=server` sends it, and the
// apiserver's reason (after `"name" is invalid: `) is what the folder
// reader says after the object's name, word for word.
func TestRefusedAlikeByAPIServer(t *testing.T) {
	k := env.StartKube(t)
	ctx := context.Background()
	strict := client.WithFieldValidation(k.Client, metav1.FieldValidationStrict)
	if err := k.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kmm"}}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tc := range refused {
		if !apiserverCases[tc.name] {
			continue
		}
		n++
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tc.manifest), &u.Object); err != nil {
				t.Fatal(err)
			}
			apiErr := strict.Create(ctx, u, client.DryRunAll)
			_, dirErr := walkOne(t, "cluster.yaml", tc.manifest)
			if apiErr == nil || dirErr == nil {
				t.Fatalf("apiserver: %v; directory: %v; both must refuse", apiErr, dirErr)
			}
			reason := apiErr.Error()
			if _, after, ok := strings.Cut(reason, " is invalid: "); ok {
				reason = after
			}
			if !strings.HasSuffix(dirErr.Error(), ": "+reason) {
				t.Fatalf("the directory reader does not end with the apiserver's reason\napiserver: %s\ndirectory: %s", apiErr, dirErr)
			}
		})
	}
	if n != len(apiserverCases) {
		t.Fatalf("%d of the %d named cases are in the table", n, len(apiserverCases))
	}
}
