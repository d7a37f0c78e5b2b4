package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ModuleDay0Spec is one OS mapping and the pool it
// applies to. KMM allows no more than one ModuleDay0 per pool; that rule
// spans objects, so it is enforced by the trigger, not by the schema.
type ModuleDay0Spec struct {
	// OSMapping names the OS image that carries the day-0 kernel modules.
	// +required
	OSMapping OSMapping `json:"osMapping"`

	// MachineConfigPoolSelector selects the pool by its node selector
	// labels, e.g. node-role.kubernetes.io/worker: "". An empty selector
	// would match every pool, so at least one label is required.
	// +required
	// +kubebuilder:validation:MinProperties=1
	MachineConfigPoolSelector map[string]string `json:"machineConfigPoolSelector"`
}

// OSMapping maps the pool's OS to the image holding the kernel modules.
// +kubebuilder:validation:XValidation:rule="!has(self.sign) || has(self.build) || (has(self.sign.unsignedImage) && size(self.sign.unsignedImage) > 0)",message="sign.unsignedImage is required when osMapping has no build section"
// +kubebuilder:validation:XValidation:rule="!has(self.sign) || !has(self.sign.unsignedImage) || self.sign.unsignedImage != self.containerImage",message="sign.unsignedImage must differ from containerImage"
type OSMapping struct {
	// Literal is the OS name as nodes report it in
	// node.status.nodeInfo.osImage, e.g.
	// "Red Hat Enterprise Linux CoreOS 414.92.202312311229-0 (Plow)".
	// +optional
	Literal string `json:"literal,omitempty"`

	// ContainerImage is the full OS image (RHCOS-based, not UBI) holding the
	// kernel modules; it becomes the pool's osImageURL.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="!self.contains(' ')",message="containerImage must be an image reference without spaces"
	ContainerImage string `json:"containerImage"`

	// Build rebuilds ContainerImage from a Dockerfile when it does not exist.
	// +optional
	Build *Build `json:"build,omitempty"`

	// Sign signs the kernel modules of the unsigned image and pushes the
	// result as ContainerImage.
	// +optional
	Sign *Sign `json:"sign,omitempty"`

	// ClusterUpgradeTriggerNodeUpgrade rebuilds the image when the cluster's
	// y-stream moves past the nodes' OS, so that a cluster upgrade still
	// upgrades layered nodes.
	// +optional
	ClusterUpgradeTriggerNodeUpgrade bool `json:"clusterUpgradeTriggerNodeUpgrade,omitempty"`
}

// Build says how to build the kmod image.
type Build struct {
	// Secrets are made available to the build (e.g. registry credentials).
	// +optional
	// +listType=atomic
	Secrets []corev1.LocalObjectReference `json:"secrets,omitempty"`

	// DockerfileConfigMap holds the Dockerfile under the key "dockerfile".
	// It may use the build arguments DTK_AUTO (driver-toolkit image of the
	// payload) and OS_AUTO (the payload's OS image), and KERNEL_VERSION.
	// +required
	// +kubebuilder:validation:XValidation:rule="size(self.name) > 0",message="dockerfileConfigMap.name must not be empty"
	DockerfileConfigMap corev1.LocalObjectReference `json:"dockerfileConfigMap"`
}

// Sign says how to sign the kernel modules.
type Sign struct {
	// UnsignedImage is the image whose modules are signed. It may be omitted
	// when a build section exists: the build's output is signed then.
	// +optional
	UnsignedImage string `json:"unsignedImage,omitempty"`

	// CertSecret holds the public certificate under the key "cert".
	// +required
	// +kubebuilder:validation:XValidation:rule="size(self.name) > 0",message="certSecret.name must not be empty"
	CertSecret corev1.LocalObjectReference `json:"certSecret"`

	// KeySecret holds the private key under the key "key".
	// +required
	// +kubebuilder:validation:XValidation:rule="size(self.name) > 0",message="keySecret.name must not be empty"
	KeySecret corev1.LocalObjectReference `json:"keySecret"`

	// FilesToSign are absolute paths inside the image; globs and
	// ${KERNEL_FULL_VERSION} are expanded.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +listType=atomic
	// +kubebuilder:validation:items:XValidation:rule="self.startsWith('/')",message="filesToSign entries must be absolute paths"
	FilesToSign []string `json:"filesToSign"`
}

// Condition types of ModuleDay0.
const (
	// ConditionSynced: the ModuleDay0 matches its kmm-managed MachineConfig.
	ConditionSynced = "Synced"
	// ConditionBuilt: the kmod image exists (built, signed, or given).
	ConditionBuilt = "Built"
	// ConditionApplied: the pool's osImageURL is the kmod image.
	ConditionApplied = "Applied"
)

// ModuleDay0Status reports progress of the day-0 module.
type ModuleDay0Status struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ImageDigest is the digest of the image last applied to the pool.
	// +optional
	ImageDigest string `json:"imageDigest,omitempty"`

	// Conditions: Synced, Built, Applied.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ModuleDay0 hands the lifecycle of a pool's day-0 kernel modules to kiln.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=md0
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.osMapping.containerImage`
// +kubebuilder:printcolumn:name="Applied",type=string,JSONPath=`.status.conditions[?(@.type=="Applied")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ModuleDay0 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ModuleDay0Spec   `json:"spec"`
	Status ModuleDay0Status `json:"status,omitempty"`
}

// ModuleDay0List is a list of ModuleDay0.
// +kubebuilder:object:root=true
type ModuleDay0List struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ModuleDay0 `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ModuleDay0{}, &ModuleDay0List{})
}
