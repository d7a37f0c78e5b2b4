package bootimage

import (
	"fmt"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

// AWS sets ami.id to the stream's AMI for placement.region.
//
// Differences from MCO: MCO asks EC2 who owns the current AMI to tell
// RHCOS, marketplace and unknown AMIs apart; kiln makes no cloud calls, so
// any AMI given by id is replaced (exclude marketplace or custom-AMI
// MachineSets with a Partial selector). Like MCO, a MachineSet without
// ami.id (ARN or filters) is skipped.
type AWS struct{}

// Plan implements Updater.
func (AWS) Plan(in Input) (Plan, error) {
	spec := &machinev1beta1.AWSMachineProviderConfig{}
	ps, err := DecodeProviderSpec(in.MachineSet, spec)
	if err != nil {
		return Plan{}, err
	}
	if spec.AMI.ID == nil || *spec.AMI.ID == "" {
		return Plan{Skip: "ami.id not set (AMI given by ARN or filters)"}, nil
	}
	region := spec.Placement.Region
	if region == "" {
		return Plan{}, fmt.Errorf("MachineSet %s/%s spec.template.spec.providerSpec.value.placement.region: empty", in.MachineSet.Namespace, in.MachineSet.Name)
	}
	img, err := in.Stream.GetAwsRegionImage(in.Arch, region)
	if err != nil {
		// As in MCO: regions the stream does not publish to (e.g. partitions
		// with copied AMIs) are left alone, not degraded.
		return Plan{Skip: fmt.Sprintf("stream has no AMI for region %s (%v)", region, err)}, nil
	}
	if err := checkAWSAMI(img.Image); err != nil {
		return Plan{}, imageIDError("MachineSet "+in.MachineSet.Namespace+"/"+in.MachineSet.Name, awsStreamField(in.Arch, region), img.Image, err)
	}
	plan := Plan{Spec: ps, Current: *spec.AMI.ID, Target: img.Image, Release: img.Release}
	if spec.UserDataSecret != nil {
		plan.UserDataSecret = secretRef(in.MachineSet, "", spec.UserDataSecret.Name)
	}
	if img.Image == *spec.AMI.ID {
		return plan, nil
	}
	// Only one of id, arn and filters may be set: replace the whole reference.
	plan.Edits = []Edit{{Path: []any{"ami"}, Value: map[string]any{"id": img.Image}}}
	return plan, nil
}

// PlanTemplate implements TemplateUpdater for CAPA's AWSMachineTemplate:
// spec.template.spec.ami.id. CAPA machines take their region from the
// AWSCluster; an OpenShift cluster has one region, read from
// Infrastructure/cluster status.platformStatus.aws.region. A template
// without ami.id (eksLookupType or CAPA's image lookup) is skipped.
func (AWS) PlanTemplate(in TemplateInput) (Plan, error) {
	spec, err := templateSpec(in.Template)
	if err != nil {
		return Plan{}, err
	}
	cur, err := templateString(in.Template, spec, "ami", "id")
	if err != nil {
		return Plan{}, err
	}
	if cur == "" {
		return Plan{Skip: "ami.id not set (eksLookupType or image lookup)"}, nil
	}
	region := ""
	if ps := in.Infra.Status.PlatformStatus; ps != nil && ps.AWS != nil {
		region = ps.AWS.Region
	}
	if region == "" {
		return Plan{}, fmt.Errorf("Infrastructure/cluster status.platformStatus.aws.region: empty (needed for %s %s/%s)", in.Template.GetKind(), in.Template.GetNamespace(), in.Template.GetName())
	}
	img, err := in.Stream.GetAwsRegionImage(in.Arch, region)
	if err != nil {
		return Plan{Skip: fmt.Sprintf("stream has no AMI for region %s (%v)", region, err), Current: cur}, nil
	}
	if err := checkAWSAMI(img.Image); err != nil {
		return Plan{}, imageIDError(templateName(in.Template), awsStreamField(in.Arch, region), img.Image, err)
	}
	plan := Plan{Current: cur, Target: img.Image, Release: img.Release}
	if cur == img.Image {
		return plan, nil
	}
	// Only one of id and eksLookupType may be set: replace the whole reference.
	plan.Edits = []Edit{{Path: []any{"ami"}, Value: map[string]any{"id": img.Image}}}
	return plan, nil
}

func awsStreamField(arch, region string) string {
	return fmt.Sprintf("architectures.%s.images.aws.regions.%s.image", arch, region)
}
