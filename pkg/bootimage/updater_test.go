package bootimage

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
)

// Realistic provider specs, as the installer writes them (fields from
// openshift/api machine/v1beta1).
func gcpSpec(image string) *machinev1beta1.GCPMachineProviderSpec {
	return &machinev1beta1.GCPMachineProviderSpec{
		MachineType: "n2-standard-4", Region: "us-central1", Zone: "us-central1-a", ProjectID: "openshift-ci-1234",
		CanIPForward: false, DeletionProtection: false,
		Disks: []*machinev1beta1.GCPDisk{
			{AutoDelete: true, Boot: true, SizeGB: 128, Type: "pd-ssd", Image: image, Labels: map[string]string{"team": "ci"}},
			{AutoDelete: true, Boot: false, SizeGB: 256, Type: "pd-standard", Image: "projects/rhcos-cloud/global/images/data-disk"},
		},
		NetworkInterfaces: []*machinev1beta1.GCPNetworkInterface{{Network: "ci-7xk2p-network", Subnetwork: "ci-7xk2p-worker-subnet"}},
		ServiceAccounts:   []machinev1beta1.GCPServiceAccount{{Email: "ci-7xk2p-w@openshift-ci-1234.iam.gserviceaccount.com", Scopes: []string{"https://www.googleapis.com/auth/cloud-platform"}}},
		Tags:              []string{"ci-7xk2p-worker"},
		UserDataSecret:    &corev1.LocalObjectReference{Name: "worker-user-data"},
		CredentialsSecret: &corev1.LocalObjectReference{Name: "gcp-cloud-credentials"},
	}
}

func awsSpec(ami, region string) *machinev1beta1.AWSMachineProviderConfig {
	return &machinev1beta1.AWSMachineProviderConfig{
		AMI:                machinev1beta1.AWSResourceReference{ID: ptr(ami)},
		InstanceType:       "m6i.xlarge",
		Tags:               []machinev1beta1.TagSpecification{{Name: "kubernetes.io/cluster/ci-7xk2p", Value: "owned"}},
		IAMInstanceProfile: &machinev1beta1.AWSResourceReference{ID: ptr("ci-7xk2p-worker-profile")},
		UserDataSecret:     &corev1.LocalObjectReference{Name: "worker-user-data"},
		CredentialsSecret:  &corev1.LocalObjectReference{Name: "aws-cloud-credentials"},
		SecurityGroups:     []machinev1beta1.AWSResourceReference{{Filters: []machinev1beta1.Filter{{Name: "tag:Name", Values: []string{"ci-7xk2p-node"}}}}},
		Subnet:             machinev1beta1.AWSResourceReference{Filters: []machinev1beta1.Filter{{Name: "tag:Name", Values: []string{"ci-7xk2p-subnet-private-us-east-1a"}}}},
		Placement:          machinev1beta1.Placement{Region: region, AvailabilityZone: region + "a"},
		BlockDevices: []machinev1beta1.BlockDeviceMappingSpec{{EBS: &machinev1beta1.EBSBlockDeviceSpec{
			VolumeSize: ptr[int64](120), VolumeType: ptr("gp3"), Encrypted: ptr(true)}}},
	}
}

func azureSpec(img machinev1beta1.Image) *machinev1beta1.AzureMachineProviderSpec {
	return &machinev1beta1.AzureMachineProviderSpec{
		UserDataSecret:    &corev1.SecretReference{Name: "worker-user-data", Namespace: MachineAPINamespace},
		CredentialsSecret: &corev1.SecretReference{Name: "azure-cloud-credentials", Namespace: MachineAPINamespace},
		Location:          "eastus", VMSize: "Standard_D4s_v3", Image: img,
		OSDisk: machinev1beta1.OSDisk{OSType: "Linux", DiskSizeGB: 128, ManagedDisk: machinev1beta1.OSDiskManagedDiskParameters{StorageAccountType: "Premium_LRS"}},
		Subnet: "ci-7xk2p-worker-subnet", Vnet: "ci-7xk2p-vnet", ResourceGroup: "ci-7xk2p-rg",
		Zone: "1", PublicIP: false, NetworkResourceGroup: "ci-7xk2p-rg",
		Tags: map[string]string{"kubernetes.io_cluster.ci-7xk2p": "owned"},
	}
}

func vsphereSpec(template string) *machinev1beta1.VSphereMachineProviderSpec {
	return &machinev1beta1.VSphereMachineProviderSpec{
		Template:          template,
		UserDataSecret:    &corev1.LocalObjectReference{Name: "worker-user-data"},
		CredentialsSecret: &corev1.LocalObjectReference{Name: "vsphere-cloud-credentials"},
		Workspace:         &machinev1beta1.Workspace{Server: "vcenter.ci.example", Datacenter: "dc1", Datastore: "/dc1/datastore/ds1", Folder: "/dc1/vm/ci-7xk2p", ResourcePool: "/dc1/host/c1/Resources"},
		Network:           machinev1beta1.NetworkSpec{Devices: []machinev1beta1.NetworkDeviceSpec{{NetworkName: "ci-segment"}}},
		NumCPUs:           4, NumCoresPerSocket: 2, MemoryMiB: 16384, DiskGiB: 120,
	}
}

const (
	oldGCP = "projects/rhcos-cloud/global/images/rhcos-418-94-202410090804-0-gcp-x86-64"
	newGCP = "projects/rhcos-cloud/global/images/rhcos-9-6-20261001-0-gcp-x86-64"
)

func TestUpdaters(t *testing.T) {
	st := testStream(t)
	noPlan := machinev1beta1.Image{Publisher: "azureopenshift", Offer: "aro4", SKU: "aro_418", Version: "418.94.20241009", Type: machinev1beta1.AzureImageTypeMarketplaceNoPlan}
	cases := []struct {
		name      string
		platform  configv1.PlatformType
		arch      string
		spec      any
		templates map[string]string
		// want: the exact changed leaf paths and their new values; nil = up to date.
		want     map[string]any
		wantSkip string
		wantErr  string
	}{
		{name: "gcp stale boot disk", platform: configv1.GCPPlatformType, arch: "x86_64", spec: gcpSpec(oldGCP),
			want: map[string]any{".disks[0].image": newGCP}},
		{name: "gcp up to date", platform: configv1.GCPPlatformType, arch: "x86_64", spec: gcpSpec(newGCP)},
		{name: "gcp custom image left alone", platform: configv1.GCPPlatformType, arch: "x86_64",
			spec: gcpSpec("projects/my-corp/global/images/golden-rhcos"), wantSkip: "custom boot image"},
		{name: "gcp arm64", platform: configv1.GCPPlatformType, arch: "aarch64", spec: gcpSpec(oldGCP),
			want: map[string]any{".disks[0].image": "projects/rhcos-cloud/global/images/rhcos-9-6-20261001-0-gcp-aarch64"}},
		{name: "aws stale ami", platform: configv1.AWSPlatformType, arch: "x86_64", spec: awsSpec("ami-0123456789abcdef0", "eu-west-1"),
			want: map[string]any{".ami.id": "ami-0f9e8d7c6b5a40312"}},
		{name: "aws up to date", platform: configv1.AWSPlatformType, arch: "x86_64", spec: awsSpec("ami-0a1b2c3d4e5f60718", "us-east-1")},
		{name: "aws without ami.id", platform: configv1.AWSPlatformType, arch: "x86_64",
			spec: func() any {
				s := awsSpec("", "us-east-1")
				s.AMI = machinev1beta1.AWSResourceReference{ARN: ptr("arn:aws:ec2:us-east-1::image/ami-1")}
				return s
			}(),
			wantSkip: "ami.id not set"},
		{name: "aws missing region", platform: configv1.AWSPlatformType, arch: "x86_64", spec: awsSpec("ami-0123456789abcdef0", ""),
			wantErr: "placement.region: empty"},
		{name: "aws region not in stream", platform: configv1.AWSPlatformType, arch: "x86_64", spec: awsSpec("ami-0123456789abcdef0", "ap-south-2"),
			wantSkip: "stream has no AMI for region ap-south-2"},
		{name: "azure unpaid gen2", platform: configv1.AzurePlatformType, arch: "x86_64",
			spec: azureSpec(machinev1beta1.Image{Publisher: "azureopenshift", Offer: "aro4", SKU: "418-v2", Version: "418.94.20241009", Type: machinev1beta1.AzureImageTypeMarketplaceNoPlan}),
			want: map[string]any{".image.sku": "420-v2", ".image.version": "420.6.20261001"}},
		{name: "azure unpaid gen1", platform: configv1.AzurePlatformType, arch: "x86_64", spec: azureSpec(noPlan),
			want: map[string]any{".image.sku": "aro_420", ".image.version": "420.6.20261001"}},
		{name: "azure gallery gen2 moves to marketplace", platform: configv1.AzurePlatformType, arch: "x86_64",
			spec: azureSpec(machinev1beta1.Image{ResourceID: "/resourceGroups/ci-7xk2p-rg/providers/Microsoft.Compute/galleries/gallery_ci_7xk2p/images/ci-7xk2p-gen2/versions/latest"}),
			want: map[string]any{".image.publisher": "azureopenshift", ".image.offer": "aro4", ".image.sku": "420-v2", ".image.version": "420.6.20261001", ".image.resourceID": "", ".image.type": "MarketplaceNoPlan"}},
		{name: "azure paid ocp gen2", platform: configv1.AzurePlatformType, arch: "x86_64",
			spec: azureSpec(machinev1beta1.Image{Publisher: "redhat", Offer: "rh-ocp-worker", SKU: "rh-ocp-worker", Version: "4.18.2024100912", Type: machinev1beta1.AzureImageTypeMarketplaceWithPlan}),
			want: map[string]any{".image.version": "4.20.2026100112"}},
		{name: "azure paid ocp gen1", platform: configv1.AzurePlatformType, arch: "x86_64",
			spec: azureSpec(machinev1beta1.Image{Publisher: "redhat", Offer: "rh-ocp-worker", SKU: "rh-ocp-worker-gen1", Version: "4.18.2024100912", Type: machinev1beta1.AzureImageTypeMarketplaceWithPlan}),
			want: map[string]any{".image.version": "4.20.2026100112"}},
		{name: "azure arm64 unpaid is gen2", platform: configv1.AzurePlatformType, arch: "aarch64",
			spec: azureSpec(machinev1beta1.Image{Publisher: "azureopenshift", Offer: "aro4", SKU: "418-arm", Version: "418.94.20241009", Type: machinev1beta1.AzureImageTypeMarketplaceNoPlan}),
			want: map[string]any{".image.sku": "420-arm", ".image.version": "420.6.20261001"}},
		{name: "azure confidential vm", platform: configv1.AzurePlatformType, arch: "x86_64",
			spec: func() any {
				s := azureSpec(noPlan)
				s.SecurityProfile = &machinev1beta1.SecurityProfile{Settings: machinev1beta1.SecuritySettings{SecurityType: machinev1beta1.SecurityTypesConfidentialVM}}
				return s
			}(), wantSkip: "securityType ConfidentialVM"},
		{name: "azure s390x", platform: configv1.AzurePlatformType, arch: "s390x", spec: azureSpec(noPlan), wantSkip: "architecture s390x"},
		{name: "azure unknown publisher", platform: configv1.AzurePlatformType, arch: "x86_64",
			spec: azureSpec(machinev1beta1.Image{Publisher: "acme", Offer: "golden", SKU: "1", Version: "1"}), wantErr: `publisher "acme"`},
		{name: "vsphere naming rule", platform: configv1.VSpherePlatformType, arch: "x86_64", spec: vsphereSpec("ci-7xk2p-rhcos-generated-region-generated-zone"),
			want: map[string]any{".template": "ci-7xk2p-rhcos-9.6.20261001-0"}},
		{name: "vsphere path keeps folder", platform: configv1.VSpherePlatformType, arch: "x86_64", spec: vsphereSpec("/dc1/vm/ci-7xk2p/ci-7xk2p-rhcos-old"),
			want: map[string]any{".template": "/dc1/vm/ci-7xk2p/ci-7xk2p-rhcos-9.6.20261001-0"}},
		{name: "vsphere mapping", platform: configv1.VSpherePlatformType, arch: "x86_64", spec: vsphereSpec("rhcos-9.4-template"),
			templates: map[string]string{"9.4.1": "rhcos-9.4-template", "9.6.20261001-0": "rhcos-9.6-template"},
			want:      map[string]any{".template": "rhcos-9.6-template"}},
		{name: "vsphere custom template", platform: configv1.VSpherePlatformType, arch: "x86_64", spec: vsphereSpec("my-hardened-template"), wantSkip: "custom template"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ms := machineSet(t, "ms", tc.spec)
			u, ok := UpdaterFor(tc.platform)
			if !ok {
				t.Fatalf("no updater for %s", tc.platform)
			}
			plan, err := u.Plan(Input{MachineSet: ms, Arch: tc.arch, Stream: st, Infra: infra(tc.platform), VSphereTemplates: tc.templates})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantSkip != "" {
				if !strings.Contains(plan.Skip, tc.wantSkip) || len(plan.Edits) != 0 {
					t.Fatalf("skip %q edits %v, want skip %q", plan.Skip, plan.Edits, tc.wantSkip)
				}
				return
			}
			if plan.Skip != "" {
				t.Fatalf("unexpected skip: %s", plan.Skip)
			}
			if tc.want == nil {
				if len(plan.Edits) != 0 {
					t.Fatalf("up to date, but edits %v", plan.Edits)
				}
				return
			}
			next, err := plan.Spec.Apply(plan.Edits)
			if err != nil {
				t.Fatal(err)
			}
			var before, after any
			_ = json.Unmarshal(plan.Spec.Raw, &before)
			if err := json.Unmarshal(next, &after); err != nil {
				t.Fatal(err)
			}
			got := changedPaths(before, after)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Fatalf("changed fields, want exactly tc.want (-want +got):\n%s", d)
			}
			if plan.UserDataSecret.Name != "worker-user-data" || plan.UserDataSecret.Namespace != MachineAPINamespace {
				t.Errorf("user-data secret %+v", plan.UserDataSecret)
			}
		})
	}
}

func TestUnsupportedPlatforms(t *testing.T) {
	for _, p := range []configv1.PlatformType{configv1.BareMetalPlatformType, configv1.OpenStackPlatformType,
		configv1.NutanixPlatformType, configv1.IBMCloudPlatformType, configv1.PowerVSPlatformType} {
		if _, ok := UpdaterFor(p); ok {
			t.Errorf("%s has an updater", p)
		}
		if s := SupportFor(infra(p)); s.Supported || s.DefaultOn {
			t.Errorf("%s: support %+v", p, s)
		}
	}
	az := infra(configv1.AzurePlatformType)
	az.Status.PlatformStatus.Azure = &configv1.AzurePlatformStatus{CloudName: configv1.AzureStackCloud}
	if SupportFor(az).Supported {
		t.Error("AzureStackCloud supported")
	}
}
