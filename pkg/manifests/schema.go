package manifests

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

// crdFiles are the CRDs of the custom resources kiln reads, copied byte
// for byte from where they are published (OpenShift's from
// github.com/openshift/api's zz_generated.crd-manifests at the version in
// go.mod, the -Default variants a cluster without a feature set serves;
// kiln's own from config/crd). TestEmbeddedCRDsAreTheReleasedOnes holds
// them to their sources.
//
//go:embed crds/*.yaml
var crdFiles embed.FS

// crdSchema is what the apiserver validates a custom resource of one
// version with, built the way apiextensions-apiserver builds it.
type crdSchema struct {
	validator  apiservervalidation.SchemaValidator
	structural *structuralschema.Structural
	cel        *cel.Validator
	status     bool // the status subresource: create drops status
}

var schemas = sync.OnceValues(loadSchemas)

// loadSchemas reads every embedded CRD once, keyed by group, version and
// kind; a version's validators are built the first time an object of it
// is read (compiling the CEL rules of every CRD would cost each run that
// reads a few kinds).
func loadSchemas() (map[schema.GroupVersionKind]func() (*crdSchema, error), error) {
	out := map[schema.GroupVersionKind]func() (*crdSchema, error){}
	files, err := fs.Glob(crdFiles, "crds/*.yaml")
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		b, err := crdFiles.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(b, crd); err != nil {
			return nil, fmt.Errorf("reading CRD %s: %w", f, err)
		}
		for _, v := range crd.Spec.Versions {
			gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
			out[gvk] = sync.OnceValues(func() (*crdSchema, error) {
				s, err := newCRDSchema(v)
				if err != nil {
					return nil, fmt.Errorf("reading CRD %s version %s: %w", crd.Name, v.Name, err)
				}
				return s, nil
			})
		}
	}
	return out, nil
}

func newCRDSchema(v apiextensionsv1.CustomResourceDefinitionVersion) (*crdSchema, error) {
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return nil, fmt.Errorf("no openAPIV3Schema")
	}
	internal := &apiextensions.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, internal, nil); err != nil {
		return nil, err
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	structural, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	return &crdSchema{
		validator:  validator,
		structural: structural,
		cel:        cel.NewValidator(structural, true, celconfig.PerCallLimit),
		status:     v.Subresources != nil && v.Subresources.Status != nil,
	}, nil
}

// validateSchema validates obj (the object as written, decoded into plain
// JSON values) against its CRD, as the apiserver's custom resource strategy
// does on create: nulls the schema does not allow dropped, defaults applied, status dropped when it is a
// subresource, the OpenAPI schema (required, minProperties, enum, patterns,
// ...), embedded objects' metadata, list-type invariants, then the
// x-kubernetes-validations CEL rules, unless errs (the metadata's, and the
// schema's) hold one the apiserver lets block them. Kinds without an
// embedded CRD (core kinds, other groups) get errs back unchanged.
func validateSchema(gvk schema.GroupVersionKind, obj map[string]any, errs field.ErrorList) (field.ErrorList, error) {
	all, err := schemas()
	if err != nil {
		return nil, err
	}
	load, ok := all[gvk]
	if !ok {
		return errs, nil
	}
	s, err := load()
	if err != nil {
		return nil, err
	}
	if s.status {
		delete(obj, "status")
	}
	// As the apiserver's decoder does: nulls where the schema does not
	// allow them are dropped (a Go client's omitted slices arrive so), then
	// defaults are applied.
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, s.structural)
	structuraldefaulting.Default(obj, s.structural)
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, obj, s.validator)...)
	errs = append(errs, schemaobjectmeta.Validate(nil, obj, s.structural, false)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, s.structural, obj)...)
	if blocking(errs) {
		return append(errs, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")), nil
	}
	celErrs, _ := s.cel.Validate(context.Background(), nil, s.structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...), nil
}

// blocking is the apiserver's test for errors after which the CEL rules
// are not run, since they may assume the schema's types and bounds.
func blocking(errs field.ErrorList) bool {
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true
		}
	}
	return false
}
