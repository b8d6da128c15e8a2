package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/operation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	resourceinternal "k8s.io/kubernetes/pkg/apis/resource"
	_ "k8s.io/kubernetes/pkg/apis/resource/install" // resource.k8s.io's types, conversions and defaults
	"k8s.io/kubernetes/pkg/apis/resource/validation"
	"k8s.io/kubernetes/pkg/features"
)

// The API server's own validation (k8s.io/kubernetes pkg/apis/resource/validation and the
// declarative validation of the resource.k8s.io types), run on every object an input holds as
// the API server runs it on a create (k8s.io/apiserver rest.ValidateCreate): the v1 object
// defaulted and converted to the internal type through the API server's scheme, the object's
// validation, the metadata checks and declarative validation, with every DRA feature gate on (as
// the allocator has every feature on). An allocated claim's status is validated as the
// scheduler's status update is (ValidateResourceClaimStatusUpdate).
//
// What the registry strategies (pkg/registry/resource/*, v1.37.2) add around those calls is
// reproduced below instead of imported, which halves what this program compiles (their
// packages bring client-go and the storage layer): for a create, PrepareForCreate sets the
// generation, clears a claim's status and drops the fields of disabled features (none: every
// gate is on); Validate is the validation function; DeclarativeValidationConfig gives the
// normalization rules and, for slices, the DRAPartitionableDevicesType option.
//
// Left out, because they are not about the object: the admin-access check against the
// namespace's label (the claim strategies read the Namespace from the API server) and the
// authorization of who writes a status.

// createStrategy is a registry strategy's create path for one kind.
type createStrategy struct {
	rest.DeclarativeValidation
	names.NameGenerator
	namespaced bool
	validate   func(obj runtime.Object) field.ErrorList
	config     func() rest.DeclarativeValidationConfig
}

func (s createStrategy) NamespaceScoped() bool                                    { return s.namespaced }
func (s createStrategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {}
func (s createStrategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return s.validate(obj)
}
func (s createStrategy) WarningsOnCreate(ctx context.Context, obj runtime.Object) []string {
	return nil
}
func (s createStrategy) Canonicalize(obj runtime.Object) {}
func (s createStrategy) DeclarativeValidationConfig(ctx context.Context, obj, oldObj runtime.Object) rest.DeclarativeValidationConfig {
	return s.config()
}

func normalized() rest.DeclarativeValidationConfig {
	return rest.DeclarativeValidationConfig{NormalizationRules: validation.ResourceNormalizationRules}
}

var (
	sliceStrategy = createStrategy{
		DeclarativeValidation: rest.DeclarativeValidation{Scheme: legacyscheme.Scheme}, NameGenerator: names.SimpleNameGenerator,
		validate: func(obj runtime.Object) field.ErrorList {
			return validation.ValidateResourceSlice(obj.(*resourceinternal.ResourceSlice))
		},
		config: func() rest.DeclarativeValidationConfig {
			config := normalized()
			config.Options = map[string]bool{string(features.DRAPartitionableDevicesType): utilfeature.DefaultFeatureGate.Enabled(features.DRAPartitionableDevicesType)}
			return config
		},
	}
	classStrategy = createStrategy{
		DeclarativeValidation: rest.DeclarativeValidation{Scheme: legacyscheme.Scheme}, NameGenerator: names.SimpleNameGenerator,
		validate: func(obj runtime.Object) field.ErrorList {
			return validation.ValidateDeviceClass(obj.(*resourceinternal.DeviceClass))
		},
		config: func() rest.DeclarativeValidationConfig { return rest.DeclarativeValidationConfig{} },
	}
	claimStrategy = createStrategy{
		DeclarativeValidation: rest.DeclarativeValidation{Scheme: legacyscheme.Scheme}, NameGenerator: names.SimpleNameGenerator,
		namespaced: true,
		validate: func(obj runtime.Object) field.ErrorList {
			return validation.ValidateResourceClaim(obj.(*resourceinternal.ResourceClaim))
		},
		config: normalized,
	}
	templateStrategy = createStrategy{
		DeclarativeValidation: rest.DeclarativeValidation{Scheme: legacyscheme.Scheme}, NameGenerator: names.SimpleNameGenerator,
		namespaced: true,
		validate: func(obj runtime.Object) field.ErrorList {
			return validation.ValidateResourceClaimTemplate(obj.(*resourceinternal.ResourceClaimTemplate))
		},
		config: normalized,
	}
)

// enableDRAFeatures turns on every DRA feature gate that is off by default, with what they need,
// read from the release's own gate table (as tests/e2e's all-dra profile does).
func enableDRAFeatures() error {
	gates := utilfeature.DefaultMutableFeatureGate
	specs := gates.GetAll()
	dependencies := gates.Dependencies()
	on := map[string]bool{}
	var enable func(name featuregate.Feature)
	enable = func(name featuregate.Feature) {
		if on[string(name)] || specs[name].LockToDefault || specs[name].Default {
			return // already on (setting a GA gate only logs a warning)
		}
		on[string(name)] = true
		for _, dependency := range dependencies[name] {
			enable(dependency)
		}
	}
	for name := range specs {
		if strings.HasPrefix(string(name), "DRA") {
			enable(name)
		}
	}
	return gates.SetFromMap(on)
}

// validationContext is a create request for resource.k8s.io/v1, which declarative validation
// reads the API version from.
func validationContext(subresource string) context.Context {
	ctx := genericapirequest.WithNamespace(context.Background(), "")
	return genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, APIGroup: resourceapi.GroupName, APIVersion: "v1", Subresource: subresource,
	})
}

// toInternal defaults a copy of a v1 object and converts it, as the API server decodes a request.
func toInternal(versioned runtime.Object, internal runtime.Object) error {
	copied := versioned.DeepCopyObject()
	legacyscheme.Scheme.Default(copied)
	return legacyscheme.Scheme.Convert(copied, internal, nil)
}

// createErrors runs the API server's create path (without storage) on an internal object.
func createErrors(strategy rest.RESTCreateStrategy, obj runtime.Object) field.ErrorList {
	ctx := validationContext("")
	strategy.PrepareForCreate(ctx, obj)
	return rest.ValidateCreate(ctx, obj, strategy)
}

// invalidObject names an object upstream refuses and why.
type invalidObject struct {
	object string // "ResourceSlice NAME"
	errs   field.ErrorList
}

func (o invalidObject) String() string {
	return fmt.Sprintf("%s: %s", o.object, o.errs.ToAggregate())
}

var featuresOnce struct {
	sync.Once
	err error
}

// validateInputs returns every object of the input the API server refuses (none: all valid).
func validateInputs(in *inputs) ([]invalidObject, error) {
	featuresOnce.Do(func() { featuresOnce.err = enableDRAFeatures() })
	if featuresOnce.err != nil {
		return nil, fmt.Errorf("feature gates: %w", featuresOnce.err)
	}
	var refused []invalidObject
	note := func(object string, errs field.ErrorList) {
		if len(errs) > 0 {
			refused = append(refused, invalidObject{object: object, errs: errs})
		}
	}
	refused = append(refused, duplicates(in)...)
	for _, slice := range in.Slices {
		errs, err := cachedErrors(slice, func() (field.ErrorList, error) {
			internal := &resourceinternal.ResourceSlice{}
			if err := toInternal(slice, internal); err != nil {
				return nil, err
			}
			internal.Generation = 1
			return createErrors(sliceStrategy, internal), nil
		})
		if err != nil {
			return nil, fmt.Errorf("ResourceSlice %s: %w", slice.Name, err)
		}
		note("ResourceSlice "+slice.Name, errs)
	}
	for _, class := range in.Classes {
		errs, err := cachedErrors(class, func() (field.ErrorList, error) {
			internal := &resourceinternal.DeviceClass{}
			if err := toInternal(class, internal); err != nil {
				return nil, err
			}
			internal.Generation = 1
			return createErrors(classStrategy, internal), nil
		})
		if err != nil {
			return nil, fmt.Errorf("DeviceClass %s: %w", class.Name, err)
		}
		note("DeviceClass "+class.Name, errs)
	}
	for _, template := range in.Templates {
		errs, err := cachedErrors(template, func() (field.ErrorList, error) {
			internal := &resourceinternal.ResourceClaimTemplate{}
			if err := toInternal(template, internal); err != nil {
				return nil, err
			}
			return createErrors(templateStrategy, internal), nil
		})
		if err != nil {
			return nil, fmt.Errorf("ResourceClaimTemplate %s/%s: %w", template.Namespace, template.Name, err)
		}
		note("ResourceClaimTemplate "+template.Namespace+"/"+template.Name, errs)
	}
	for _, claim := range in.Claims {
		errs, err := cachedErrors(claim, func() (field.ErrorList, error) { return claimErrors(claim) })
		if err != nil {
			return nil, err
		}
		note("ResourceClaim "+claimKey(claim), errs)
	}
	return refused, nil
}

// validated remembers the verdict on each object already validated (by its JSON): seeds repeat
// classes and claims, and compiling their CEL expressions is most of validation's cost.
var validated = map[string]field.ErrorList{}

func cachedErrors(object any, validate func() (field.ErrorList, error)) (field.ErrorList, error) {
	encoded, err := json.Marshal(object)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%T %s", object, encoded)
	if errs, ok := validated[key]; ok {
		return errs, nil
	}
	errs, err := validate()
	if err != nil {
		return nil, err
	}
	if len(validated) >= 20000 {
		clear(validated)
	}
	validated[key] = errs
	return errs, nil
}

// claimErrors validates a claim's spec as created and, when it is allocated, its status as the
// scheduler's status update writes it.
func claimErrors(claim *resourceapi.ResourceClaim) (field.ErrorList, error) {
	created := &resourceinternal.ResourceClaim{}
	if err := toInternal(claim, created); err != nil {
		return nil, fmt.Errorf("ResourceClaim %s: %w", claimKey(claim), err)
	}
	allocated := created.DeepCopy()
	created.Status = resourceinternal.ResourceClaimStatus{} // PrepareForCreate: status is not written on create
	errs := createErrors(claimStrategy, created)
	if len(errs) > 0 || allocated.Status.Allocation == nil {
		return errs, nil
	}
	// The stored claim (status cleared on create) is the old object of the status update, which
	// keeps the stored spec and metadata.
	created.ResourceVersion = "1"
	allocated.ObjectMeta, allocated.Spec = created.ObjectMeta, created.Spec
	ctx := validationContext("status")
	errs = validation.ValidateResourceClaimStatusUpdate(allocated, created)
	return claimStrategy.ValidateDeclaratively(ctx, allocated, created, errs, operation.Update, normalized()), nil
}

// duplicates: an object given twice (kind, namespace, name): one API server holds one of them,
// the second create is refused (AlreadyExists).
func duplicates(in *inputs) []invalidObject {
	var refused []invalidObject
	seen := map[string]bool{}
	note := func(kind, namespace, name string) {
		key := kind + " " + name
		if namespace != "" {
			key = kind + " " + namespace + "/" + name
		}
		if seen[key] {
			refused = append(refused, invalidObject{object: key, errs: field.ErrorList{
				field.Duplicate(field.NewPath("metadata", "name"), name)}})
		}
		seen[key] = true
	}
	for _, slice := range in.Slices {
		note("ResourceSlice", "", slice.Name)
	}
	for _, class := range in.Classes {
		note("DeviceClass", "", class.Name)
	}
	for _, claim := range in.Claims {
		note("ResourceClaim", claim.Namespace, claim.Name)
	}
	for _, template := range in.Templates {
		note("ResourceClaimTemplate", template.Namespace, template.Name)
	}
	return refused
}
