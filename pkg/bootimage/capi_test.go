package bootimage

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	configv1 "github.com/openshift/api/config/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Templates as OpenShift's installer writes them for Cluster API (the GCP one
// is the enhancement's sample; field names from CAPG v1beta1 and CAPA v1beta2).
const gcpTemplateYAML = `apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: GCPMachineTemplate
metadata:
  name: ci-7xk2p-worker-a
  namespace: openshift-cluster-api
  labels:
    cluster.x-k8s.io/cluster-name: ci-7xk2p
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{"big":"blob"}'
  ownerReferences:
  - apiVersion: cluster.x-k8s.io/v1beta2
    kind: Cluster
    name: ci-7xk2p
    uid: 6f1c2d3e-4b5a-4c6d-8e7f-0123456789ab
spec:
  template:
    metadata:
      labels:
        node-role.kubernetes.io/worker: ""
    spec:
      rootDeviceType: pd-ssd
      rootDeviceSize: 128
      instanceType: n1-standard-4
      image: IMAGE
      subnet: ci-7xk2p-worker-subnet
      serviceAccounts:
        email: ci-7xk2p-w@openshift-ci.iam.gserviceaccount.com
        scopes:
        - https://www.googleapis.com/auth/cloud-platform
      additionalLabels:
        kubernetes-io-cluster-ci-7xk2p: owned
      additionalNetworkTags:
      - ci-7xk2p-worker
      ipForwarding: Disabled
`

const awsTemplateYAML = `apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: AWSMachineTemplate
metadata:
  name: ci-7xk2p-worker-us-east-1a
  namespace: openshift-cluster-api
spec:
  template:
    spec:
      instanceType: m6i.xlarge
      ami:
        id: IMAGE
      iamInstanceProfile: ci-7xk2p-worker-profile
      subnet:
        filters:
        - name: tag:Name
          values:
          - ci-7xk2p-subnet-private-us-east-1a
      additionalSecurityGroups:
      - filters:
        - name: tag:Name
          values:
          - ci-7xk2p-node
      rootVolume:
        size: 120
        type: gp3
        encrypted: true
      uncompressedUserData: true
      ignition:
        version: "3.4"
        storageType: UnencryptedUserData
`

func template(t testing.TB, doc, image string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(strings.Replace(doc, "IMAGE", image, 1)))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

func awsInfra(region string) *configv1.Infrastructure {
	inf := infra(configv1.AWSPlatformType)
	inf.Status.PlatformStatus.AWS = &configv1.AWSPlatformStatus{Region: region}
	return inf
}

func TestTemplateRewrite(t *testing.T) {
	st := testStream(t)
	cases := []struct {
		name  string
		tmpl  *unstructured.Unstructured
		arch  string
		infra *configv1.Infrastructure
		// want are the changed leaf paths of spec; nil means up to date.
		want    map[string]any
		skip    string
		wantErr string
	}{
		{name: "gcp stale", tmpl: template(t, gcpTemplateYAML, oldGCP), arch: "x86_64", infra: infra(configv1.GCPPlatformType),
			want: map[string]any{".template.spec.image": newGCP}},
		{name: "gcp arm64", tmpl: template(t, gcpTemplateYAML, oldGCP), arch: "aarch64", infra: infra(configv1.GCPPlatformType),
			want: map[string]any{".template.spec.image": "projects/rhcos-cloud/global/images/rhcos-9-6-20261001-0-gcp-aarch64"}},
		{name: "gcp up to date", tmpl: template(t, gcpTemplateYAML, newGCP), arch: "x86_64", infra: infra(configv1.GCPPlatformType)},
		{name: "gcp custom image", tmpl: template(t, gcpTemplateYAML, "projects/acme/global/images/golden"), arch: "x86_64",
			infra: infra(configv1.GCPPlatformType), skip: "custom boot image"},
		{name: "gcp image family", tmpl: template(t, strings.Replace(gcpTemplateYAML, "image: IMAGE", "imageFamily: projects/acme/global/images/family/rhcos", 1), ""),
			arch: "x86_64", infra: infra(configv1.GCPPlatformType), skip: "image not set"},
		{name: "gcp image not a string", tmpl: template(t, strings.Replace(gcpTemplateYAML, "image: IMAGE", "image: 42", 1), ""),
			arch: "x86_64", infra: infra(configv1.GCPPlatformType), wantErr: "GCPMachineTemplate openshift-cluster-api/ci-7xk2p-worker-a spec.template.spec.image"},
		{name: "aws stale", tmpl: template(t, awsTemplateYAML, "ami-0123456789abcdef0"), arch: "x86_64", infra: awsInfra("eu-west-1"),
			want: map[string]any{".template.spec.ami.id": "ami-0f9e8d7c6b5a40312"}},
		{name: "aws up to date", tmpl: template(t, awsTemplateYAML, "ami-0a1b2c3d4e5f60718"), arch: "x86_64", infra: awsInfra("us-east-1")},
		{name: "aws eks lookup", tmpl: template(t, strings.Replace(awsTemplateYAML, "id: IMAGE", "eksLookupType: AmazonLinux", 1), ""),
			arch: "x86_64", infra: awsInfra("us-east-1"), skip: "ami.id not set"},
		{name: "aws region the stream lacks", tmpl: template(t, awsTemplateYAML, "ami-0123456789abcdef0"), arch: "x86_64",
			infra: awsInfra("us-isob-east-1"), skip: "stream has no AMI for region us-isob-east-1"},
		{name: "aws no region", tmpl: template(t, awsTemplateYAML, "ami-0123456789abcdef0"), arch: "x86_64", infra: awsInfra(""),
			wantErr: "Infrastructure/cluster status.platformStatus.aws.region: empty (needed for AWSMachineTemplate openshift-cluster-api/ci-7xk2p-worker-us-east-1a)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ref := RefOf(c.tmpl)
			up, ok := TemplateUpdaterFor(ref.Group, ref.Kind)
			if !ok {
				t.Fatalf("no updater for %s", ref)
			}
			before := c.tmpl.DeepCopy()
			plan, err := up.PlanTemplate(TemplateInput{Template: c.tmpl, Arch: c.arch, Stream: st, Infra: c.infra})
			if d := cmp.Diff(before, c.tmpl); d != "" {
				t.Fatalf("PlanTemplate changed its input (-before +after):\n%s", d)
			}
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.skip != "" {
				if !strings.Contains(plan.Skip, c.skip) || len(plan.Edits) != 0 {
					t.Fatalf("plan %+v, want skip %q", plan, c.skip)
				}
				return
			}
			if plan.Skip != "" {
				t.Fatalf("skipped: %s", plan.Skip)
			}
			if c.want == nil {
				if len(plan.Edits) != 0 {
					t.Fatalf("up to date, but edits %v", plan.Edits)
				}
				return
			}
			clone, err := cloneTemplate(c.tmpl, plan.Edits)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, changedPaths(c.tmpl.Object["spec"], clone.Object["spec"])); d != "" {
				t.Errorf("spec changes (-want +got):\n%s", d)
			}
			checkClone(t, c.tmpl, clone)
			again, err := cloneTemplate(c.tmpl, plan.Edits)
			if err != nil || again.GetName() != clone.GetName() {
				t.Errorf("cloning twice: names %s and %s (%v)", clone.GetName(), again.GetName(), err)
			}
			// A clone of the clone keeps the base name instead of growing.
			next, err := cloneTemplate(clone, []Edit{{Path: plan.Edits[0].Path, Value: "projects/rhcos-cloud/global/images/next"}})
			if err != nil {
				t.Fatal(err)
			}
			if base := c.tmpl.GetName(); !strings.HasPrefix(next.GetName(), base+"-") || len(next.GetName()) != len(base)+1+hashLen || next.GetName() == clone.GetName() {
				t.Errorf("clone of clone named %s (first clone %s)", next.GetName(), clone.GetName())
			}
		})
	}
}

// checkClone: same kind, namespace, labels, owners; a content-hash name
// derived from the old one; server fields and last-applied dropped.
func checkClone(t *testing.T, old, clone *unstructured.Unstructured) {
	t.Helper()
	if clone.GetAPIVersion() != old.GetAPIVersion() || clone.GetKind() != old.GetKind() || clone.GetNamespace() != old.GetNamespace() {
		t.Errorf("clone is %s %s in %s", clone.GetAPIVersion(), clone.GetKind(), clone.GetNamespace())
	}
	if !strings.HasPrefix(clone.GetName(), old.GetName()+"-") || len(clone.GetName()) != len(old.GetName())+1+hashLen {
		t.Errorf("clone name %q is not %s-<%d hex digits>", clone.GetName(), old.GetName(), hashLen)
	}
	if d := cmp.Diff(old.GetLabels(), clone.GetLabels()) + cmp.Diff(old.GetOwnerReferences(), clone.GetOwnerReferences()); d != "" {
		t.Errorf("clone labels or owners differ from the template's (-template +clone):\n%s", d)
	}
	ann := clone.GetAnnotations()
	if ann[TemplateClonedFromAnnotation] != old.GetName() || ann[TemplateBaseNameAnnotation] != old.GetName() {
		t.Errorf("clone annotations %v", ann)
	}
	if _, ok := ann["kubectl.kubernetes.io/last-applied-configuration"]; ok {
		t.Error("clone kept last-applied-configuration")
	}
	if clone.GetResourceVersion() != "" || clone.GetUID() != "" || clone.Object["status"] != nil {
		t.Error("clone carries server fields")
	}
}

func TestInfraRef(t *testing.T) {
	ms := func(ref map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"infrastructureRef": ref}}}}}
		u.SetAPIVersion("cluster.x-k8s.io/v1beta2")
		u.SetKind("MachineSet")
		u.SetNamespace(CAPINamespace)
		u.SetName("w")
		return u
	}
	cases := []struct {
		name    string
		ref     map[string]any
		want    TemplateRef
		wantErr string
	}{
		{name: "v1beta1", ref: map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "GCPMachineTemplate", "name": "t"},
			want: TemplateRef{Group: InfraGroup, Version: "v1beta1", Kind: "GCPMachineTemplate", Namespace: CAPINamespace, Name: "t"}},
		{name: "v1beta2", ref: map[string]any{"apiGroup": InfraGroup, "kind": "AWSMachineTemplate", "name": "t"},
			want: TemplateRef{Group: InfraGroup, Kind: "AWSMachineTemplate", Namespace: CAPINamespace, Name: "t"}},
		{name: "no kind", ref: map[string]any{"apiGroup": InfraGroup, "name": "t"}, wantErr: "MachineSet openshift-cluster-api/w spec.template.spec.infrastructureRef.kind: empty"},
		{name: "no name", ref: map[string]any{"apiGroup": InfraGroup, "kind": "K"}, wantErr: "infrastructureRef.name: empty"},
		{name: "no group", ref: map[string]any{"kind": "K", "name": "t"}, wantErr: "neither apiVersion nor apiGroup"},
		{name: "bad apiVersion", ref: map[string]any{"apiVersion": "a/b/c", "kind": "K", "name": "t"}, wantErr: "infrastructureRef.apiVersion"},
	}
	for _, c := range cases {
		got, err := infraRef(ms(c.ref))
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: err %v, want %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
	if _, ok := TemplateUpdaterFor(InfraGroup, "AzureMachineTemplate"); ok {
		t.Error("AzureMachineTemplate has an updater")
	}
	if _, ok := TemplateUpdaterFor("example.com", "GCPMachineTemplate"); ok {
		t.Error("a GCPMachineTemplate of another group has an updater")
	}
}

// FuzzInfraTemplate feeds arbitrary JSON as a MachineSet's infrastructureRef
// and as a machine template to the CAPI parsers and updaters: no panic, a
// parsed reference is complete, and a planned rewrite clones into a template
// that differs from the input in the boot image field only.
func FuzzInfraTemplate(f *testing.F) {
	f.Add([]byte(`{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"GCPMachineTemplate","name":"t"}`),
		[]byte(`{"spec":{"template":{"spec":{"image":"`+oldGCP+`","instanceType":"n1-standard-4","rootDeviceSize":128}}}}`))
	f.Add([]byte(`{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta2","kind":"AWSMachineTemplate","name":"t"}`),
		[]byte(`{"spec":{"template":{"spec":{"ami":{"id":"ami-1"},"instanceType":"m6i.xlarge"}}}}`))
	f.Add([]byte(`{"kind":7}`), []byte(`{"spec":{"template":{"spec":{"image":7,"ami":"x"}}}}`))
	f.Add([]byte(`null`), []byte(`{"spec":[]}`))
	st := testStream(f)
	inf := awsInfra("us-east-1")
	f.Fuzz(func(t *testing.T, refJSON, tmplJSON []byte) {
		var ref any
		if json.Unmarshal(refJSON, &ref) == nil {
			ms := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"infrastructureRef": ref}}}}}
			if r, err := infraRef(ms); err == nil && (r.Kind == "" || r.Name == "" || r.Group == "") {
				t.Fatalf("incomplete reference %+v accepted", r)
			}
		}
		obj := map[string]any{}
		if json.Unmarshal(tmplJSON, &obj) != nil {
			return
		}
		obj = runtime.DeepCopyJSON(normalizeNumbers(obj).(map[string]any))
		for _, kind := range []string{"GCPMachineTemplate", "AWSMachineTemplate"} {
			tm := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)}
			tm.SetAPIVersion(InfraGroup + "/v1beta1")
			tm.SetKind(kind)
			tm.SetName("t")
			up, _ := TemplateUpdaterFor(InfraGroup, kind)
			plan, err := up.PlanTemplate(TemplateInput{Template: tm, Arch: "x86_64", Stream: st, Infra: inf})
			if err != nil || len(plan.Edits) == 0 {
				continue
			}
			clone, err := cloneTemplate(tm, plan.Edits)
			if err != nil {
				t.Fatalf("%s: planned edits %v do not apply: %v", kind, plan.Edits, err)
			}
			for p := range changedPaths(tm.Object["spec"], clone.Object["spec"]) {
				if p != ".template.spec.image" && p != ".template.spec.ami.id" && p != ".template.spec.ami" {
					t.Fatalf("%s: clone changed %s", kind, p)
				}
			}
		}
	})
}

// normalizeNumbers turns encoding/json's float64 into the int64/float64 mix
// that unstructured objects hold.
func normalizeNumbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = normalizeNumbers(x)
		}
	case []any:
		for i, x := range v {
			v[i] = normalizeNumbers(x)
		}
	case float64:
		if v == float64(int64(v)) {
			return int64(v)
		}
	}
	return v
}
