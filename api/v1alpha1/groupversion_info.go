package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Note: apimachinery's SchemeBuilder, not controller-runtime's (deprecated), so
// that importing the API does not pull in controller-runtime.
var (
	// GroupVersion is the group and version of every object in this package.
	GroupVersion = schema.GroupVersion{Group: "sandbox.roboco.io", Version: "v1alpha1"}

	// SchemeGroupVersion is GroupVersion under the name generated clients use.
	SchemeGroupVersion = GroupVersion

	// SchemeBuilder registers the package's types with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the package's types to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Sandbox{}, &SandboxList{}, &SandboxPool{}, &SandboxPoolList{}, &DockerHost{}, &DockerHostList{},
		&SandboxQuota{}, &SandboxQuotaList{}, &SandboxPolicy{}, &SandboxPolicyList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// Resource qualifies a resource of this group (e.g. "sandboxes"), as listers
// name it in their NotFound errors.
func Resource(resource string) schema.GroupResource {
	return GroupVersion.WithResource(resource).GroupResource()
}
