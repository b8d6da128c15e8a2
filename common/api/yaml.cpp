#include "numadra/api/yaml.hpp"

#include "text_writers.hpp"

namespace numadra::api {

namespace {

std::string scalar(const Json& value) {
    // JSON's string escaping is valid YAML double-quoted style.
    return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string key(const std::string& k) {
    return detail::isPlainYamlKey(k) ? k : Json(k).dump();
}

bool isEmptyContainer(const Json& v) {
    return (v.is_object() || v.is_array()) && v.empty();
}

void emit(const Json& value, int indent, std::string& out);

void emitObject(const Json& object, int indent, std::string& out, bool firstInline) {
    bool first = true;
    for (auto it = object.begin(); it != object.end(); ++it) {
        if (!(first && firstInline))
            out.append(static_cast<size_t>(indent), ' ');
        first = false;
        out += key(it.key()) + ":";
        const Json& v = it.value();
        if (v.is_object() && !v.empty()) {
            out += "\n";
            emitObject(v, indent + 2, out, false);
        } else if (v.is_array() && !v.empty()) {
            out += "\n";
            emit(v, indent, out);
        } else {
            out += " " +
                   (isEmptyContainer(v) ? (v.is_object() ? std::string("{}") : std::string("[]"))
                                        : scalar(v)) +
                   "\n";
        }
    }
}

void emit(const Json& value, int indent, std::string& out) {
    if (value.is_object()) {
        emitObject(value, indent, out, false);
    } else if (value.is_array()) {
        for (const auto& item : value) {
            out.append(static_cast<size_t>(indent), ' ');
            out += "- ";
            if (item.is_object() && !item.empty()) {
                emitObject(item, indent + 2, out, true);
            } else if (item.is_array() && !item.empty()) {
                out += "\n";
                emit(item, indent + 2, out);
            } else {
                out += (isEmptyContainer(item)
                            ? (item.is_object() ? std::string("{}") : std::string("[]"))
                            : scalar(item)) +
                       "\n";
            }
        }
    } else {
        out.append(static_cast<size_t>(indent), ' ');
        out += scalar(value) + "\n";
    }
}

}  // namespace

std::string toYaml(const Json& document) {
    std::string out;
    if (isEmptyContainer(document))
        return document.is_object() ? "{}\n" : "[]\n";
    emit(document, 0, out);
    return out;
}

std::string toYamlStream(const std::vector<Json>& documents) {
    std::string out;
    for (const auto& document : documents) {
        out += "---\n";
        out += toYaml(document);
    }
    return out;
}

}  // namespace numadra::api
