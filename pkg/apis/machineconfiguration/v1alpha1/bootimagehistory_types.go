package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BootImageHistory records the boot image updates of one machine management
// resource (a MachineSet of the Machine API or of Cluster API). It lives in
// the resource's namespace and is named "<name>-mapi-machineset" or
// "<name>-capi-machineset".
//
// Differences from the boot images enhancement's stub type: status is a plain field, not a
// subresource (kiln's bootimages stage is the only writer and records an
// entry in one write); the entry's time field is "updateTime", as in the
// enhancement's YAML examples (its Go stub says "updatedTime"); details are capped
// at MaxDetails, newest last.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=bih
// +kubebuilder:printcolumn:name="Resource",type=string,JSONPath=`.spec.machineResourceReference.name`
// +kubebuilder:printcolumn:name="Group",type=string,JSONPath=`.spec.machineResourceReference.apiGroup`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BootImageHistory struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec BootImageHistorySpec `json:"spec"`
	// +optional
	Status BootImageHistoryStatus `json:"status,omitempty"`
}

// BootImageHistorySpec names the tracked resource.
type BootImageHistorySpec struct {
	// machineResourceReference identifies the machine management resource.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="machineResourceReference is immutable once set"
	// +required
	MachineResourceReference MachineResourceReference `json:"machineResourceReference"`
}

// MachineResourceReference identifies a machine management resource.
type MachineResourceReference struct {
	// name is the resource's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
	// resource is the resource's kind, e.g. MachineSet or MachineDeployment.
	// +kubebuilder:validation:MinLength=1
	// +required
	Resource string `json:"resource"`
	// apiGroup tells Machine API (machine.openshift.io) and Cluster API
	// (cluster.x-k8s.io) resources apart.
	// +kubebuilder:validation:Enum=machine.openshift.io;cluster.x-k8s.io
	// +required
	APIGroup string `json:"apiGroup"`
}

// MaxDetails bounds the history; older entries are dropped first.
const MaxDetails = 50

// BootImageHistoryStatus lists the updates, oldest first.
type BootImageHistoryStatus struct {
	// details has one entry per boot image update.
	// +kubebuilder:validation:MaxItems=50
	// +listType=atomic
	// +optional
	Details []BootImageHistoryDetail `json:"details,omitempty"`
}

// BootImageHistoryDetail is one update.
type BootImageHistoryDetail struct {
	// updateTime is when the update was applied.
	// +required
	UpdateTime metav1.Time `json:"updateTime"`
	// bootImageVersion is the RHCOS release the resource was moved to.
	// +kubebuilder:validation:MinLength=1
	// +required
	BootImageVersion string `json:"bootImageVersion"`
	// bootImage is the platform's boot image reference after the update
	// (image path, AMI, marketplace URN or template): what a manual restore
	// needs.
	// +optional
	BootImage string `json:"bootImage,omitempty"`
	// configMapGeneration is the coreos-bootimages ConfigMap's
	// metadata.generation the update came from.
	// +required
	ConfigMapGeneration int64 `json:"configMapGeneration"`
}

// BootImageHistoryList is a list of BootImageHistory.
//
// +kubebuilder:object:root=true
type BootImageHistoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BootImageHistory `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BootImageHistory{}, &BootImageHistoryList{})
}
