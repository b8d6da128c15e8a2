// DeviceClasses, and the device selectors and opaque configuration that claims give as
// classes do.

#include "decode_support.hpp"
#include "numadra/dracel/device.hpp"
#include "validation.hpp"

namespace numadra::allocator::decoding {

Status decodeSelectors(const Reader& r, std::vector<std::string>& out) {
    Status s = r.each("selectors", [&](const Reader& item) -> Status {
        if (Status u = item.rejectUnknownFields({"cel"}); !u)
            return u;
        if (!item.has("cel"))
            return item.error("CEL expression empty (unsupported selector type?)");
        auto cel = item.requiredObject("cel");
        if (!cel)
            return cel.error();
        if (Status u = cel->rejectUnknownFields({"expression"}); !u)
            return u;
        std::string expression;
        if (Status e = readRequiredString(*cel, "expression", expression); !e)
            return e;
        if (Status e = validation::checkExpression(*cel, "expression", expression); !e)
            return e;
        // The API server refuses what does not compile; so do we, with the field's path.
        if (auto compiled = dracel::Expression::compileSelector(expression); !compiled)
            return cel->fieldError("expression", compiled.error().message);
        out.push_back(std::move(expression));
        return Status::Ok();
    });
    if (!s)
        return s;
    if (out.size() > 32)
        return r.fieldError("selectors", "must have at most 32 items");
    return Status::Ok();
}

Result<DeviceConfig> decodeOpaque(const Reader& r) {
    auto opaque = r.requiredObject("opaque");
    if (!opaque)
        return opaque.error();
    if (Status s = opaque->rejectUnknownFields({"driver", "parameters"}); !s)
        return s.error();
    DeviceConfig config;
    if (Status s = readRequiredString(*opaque, "driver", config.driver); !s)
        return s.error();
    if (!opaque->has("parameters"))
        return opaque->fieldError("parameters", "required value");
    config.parameters = opaque->field("parameters").json();
    if (!config.parameters.is_object())
        return opaque->fieldError("parameters", "must be a valid JSON object");
    if (config.parameters.dump().size() > std::size_t{10} * 1024)
        return opaque->fieldError("parameters", "must be at most 10Ki bytes");
    return config;
}

Result<DeviceClass> decodeClass(const Reader& object) {
    DeviceClass deviceClass;
    auto metadata = readMetadata(object, deviceClass.name);
    if (!metadata)
        return metadata.error();
    if (Status s = readString(*metadata, "creationTimestamp", deviceClass.creationTimestamp); !s)
        return s.error();
    auto spec = object.optionalObject("spec");
    if (!spec)
        return spec.error();
    if (!*spec)
        return deviceClass;
    const Reader& r = **spec;
    if (Status s = r.rejectUnknownFields({"selectors", "config", "extendedResourceName"}); !s)
        return s.error();
    if (Status s = decodeSelectors(r, deviceClass.selectors); !s)
        return s.error();
    Status config = r.each("config", [&](const Reader& item) -> Status {
        if (Status s = item.rejectUnknownFields({"opaque"}); !s)
            return s;
        auto opaque = decodeOpaque(item);
        if (!opaque)
            return opaque.error();
        deviceClass.config.push_back(std::move(*opaque));
        return Status::Ok();
    });
    if (!config)
        return config.error();
    if (deviceClass.config.size() > 32)
        return r.fieldError("config", "must have at most 32 items");
    if (Status s = readString(r, "extendedResourceName", deviceClass.extendedResourceName); !s)
        return s.error();
    if (r.has("extendedResourceName") &&
        !validation::isExtendedResourceName(deviceClass.extendedResourceName))
        return r.fieldError("extendedResourceName",
                            "\"" + deviceClass.extendedResourceName +
                                "\" is not a valid extended resource name: a domain outside "
                                "kubernetes.io, a slash and a name (e.g. example.com/gpu)");
    return deviceClass;
}

}  // namespace numadra::allocator::decoding
