package bootimage

// Names of the objects and keys the stage reads and writes. The values are
// facts of the OpenShift API contract (MCO, CVO, the cluster autoscaler).
const (
	// MachineAPINamespace holds the Machine API MachineSets and their user-data Secrets.
	MachineAPINamespace = "openshift-machine-api"
	// MCONamespace holds the coreos-bootimages ConfigMap.
	MCONamespace = "openshift-machine-config-operator"
	// BootImagesConfigMap is the "golden" stream of boot images the CVO writes from the payload.
	BootImagesConfigMap = "coreos-bootimages"
	// StreamKey is the ConfigMap key holding CoreOS stream metadata JSON.
	StreamKey = "stream"
	// MCOReleaseVersionKey is the stamp MCO adds once a control-plane node runs the new release.
	MCOReleaseVersionKey = "MCOReleaseImageVersion"
	// ReleaseVersionKey is the OCP release the ConfigMap was written for.
	ReleaseVersionKey = "releaseVersion"
	// MachineConfigurationName is the singleton operator configuration object.
	MachineConfigurationName = "cluster"

	// ArchAnnotation carries the node labels the autoscaler expects, among
	// them kubernetes.io/arch=<goarch>.
	ArchAnnotation  = "capacity.cluster-autoscaler.kubernetes.io/labels"
	archLabelPrefix = "kubernetes.io/arch="
	// OSStreamLabel names the OS stream of a MachineSet (dual-stream RHEL).
	OSStreamLabel = "machineconfiguration.openshift.io/osstream"
	// SupportedOSStream is the only stream whose boot images are managed.
	SupportedOSStream = "rhel-9"
	// OSIDLabel on the machine template marks Windows MachineSets.
	OSIDLabel = "machine.openshift.io/os-id"

	// UserDataKey is the Secret key holding the stub Ignition config.
	UserDataKey = "userData"
	// StubUpgradedToAnnotation records the Ignition version a stub was converted to.
	StubUpgradedToAnnotation = "machineconfiguration.openshift.io/stub-ignition-upgraded-to"
	// StubUpgradedAtAnnotation records when (RFC 3339).
	StubUpgradedAtAnnotation = "machineconfiguration.openshift.io/stub-ignition-upgraded-at"

	// HotLoopAnnotation remembers the last patch kiln applied and how many
	// times in a row. MCO keeps this in controller memory; a pipeline stage
	// has none between runs, so kiln keeps it on the MachineSet itself.
	HotLoopAnnotation = "kiln.dev/boot-image-last-patch"
	// HotLoopLimit is MCO's threshold: the same patch applied this many
	// times in a row means something reverts it, and kiln stops.
	HotLoopLimit = 3

	// Condition types on MachineConfiguration status (openshift/api names).
	ConditionProgressing = "BootImageUpdateProgressing"
	ConditionDegraded    = "BootImageUpdateDegraded"
)
