// TypeEnvironment: the declarations the type checker and the cost estimate read (functions with
// their overloads, variables, object fields, declared size limits), parsed from the tab-separated
// text upstream-cel --dump-declarations writes (cluster/dracel/declarations.txt).

#include <charconv>

#include "checked.hpp"

namespace numadra::cel {

namespace {

std::vector<std::string_view> splitTabs(std::string_view line) {
    std::vector<std::string_view> fields;
    while (true) {
        const std::size_t tab = line.find('\t');
        fields.push_back(line.substr(0, tab));
        if (tab == std::string_view::npos)
            return fields;
        line.remove_prefix(tab + 1);
    }
}

Result<TypePtr> readType(std::string_view text, int line) {
    if (auto type = parseType(text))
        return *type;
    return Error{"declarations line " + std::to_string(line) + ": invalid type '" +
                 std::string(text) + "'"};
}

std::vector<std::string> splitCommas(std::string_view text) {
    std::vector<std::string> parts;
    if (text == "-")
        return parts;
    while (true) {
        const std::size_t comma = text.find(',');
        parts.emplace_back(text.substr(0, comma));
        if (comma == std::string_view::npos)
            return parts;
        text.remove_prefix(comma + 1);
    }
}

Result<OverloadDeclaration> readOverload(const std::vector<std::string_view>& fields, int line) {
    OverloadDeclaration overload;
    overload.id = std::string(fields[2]);
    overload.member = fields[3] == "member";
    overload.typeParams = splitCommas(fields[4]);
    auto result = readType(fields[5], line);
    if (!result)
        return result.error();
    overload.result = *result;
    for (std::size_t i = 6; i < fields.size(); ++i) {
        auto arg = readType(fields[i], line);
        if (!arg)
            return arg.error();
        overload.args.push_back(*arg);
    }
    return overload;
}

Result<DeclaredSize> readSize(const std::vector<std::string_view>& fields, int line) {
    DeclaredSize size;
    const std::string_view max = fields[2];
    const auto parsed = std::from_chars(max.data(), max.data() + max.size(), size.maxElements);
    if (parsed.ec != std::errc{} || parsed.ptr != max.data() + max.size())
        return Error{"declarations line " + std::to_string(line) + ": invalid size '" +
                     std::string(max) + "'"};
    size.kind = std::string(fields[3]);
    size.attribute = fields.size() > 4 && fields[4] == "attribute";
    return size;
}

}  // namespace

Result<TypeEnvironment> TypeEnvironment::parse(std::string_view text) {
    TypeEnvironment environment;
    int number = 0;
    while (!text.empty()) {
        const std::size_t end = text.find('\n');
        const std::string_view line = text.substr(0, end);
        text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
        ++number;
        if (line.empty() || line[0] == '#')
            continue;
        const auto fields = splitTabs(line);
        const std::string_view kind = fields[0];
        const auto bad = [&] {
            return Error{"declarations line " + std::to_string(number) + ": malformed '" +
                         std::string(kind) + "' line"};
        };
        if (kind == "overload") {
            if (fields.size() < 6)
                return bad();
            auto overload = readOverload(fields, number);
            if (!overload)
                return overload.error();
            environment.functions_[std::string(fields[1])].push_back(std::move(*overload));
        } else if (kind == "variable" || kind == "field") {
            const std::size_t typeField = kind == "variable" ? 2 : 3;
            if (fields.size() != typeField + 1)
                return bad();
            auto type = readType(fields[typeField], number);
            if (!type)
                return type.error();
            if (kind == "variable")
                environment.variables_[std::string(fields[1])] = *type;
            else
                environment.fields_[std::string(fields[1])][std::string(fields[2])] = *type;
        } else if (kind == "size") {
            if (fields.size() < 4)
                return bad();
            auto size = readSize(fields, number);
            if (!size)
                return size.error();
            environment.sizes_[std::string(fields[1])] = *size;
        } else {
            return bad();
        }
    }
    return environment;
}

void TypeEnvironment::addField(const std::string& object, const std::string& field, TypePtr type) {
    fields_[object][field] = std::move(type);
}

void TypeEnvironment::addVariable(const std::string& name, TypePtr type) {
    variables_[name] = std::move(type);
}

void TypeEnvironment::addOverload(const std::string& function, OverloadDeclaration overload) {
    functions_[function].push_back(std::move(overload));
}

void TypeEnvironment::addSize(const std::string& path, DeclaredSize size) {
    sizes_[path] = std::move(size);
}

const std::vector<OverloadDeclaration>* TypeEnvironment::function(std::string_view name) const {
    const auto it = functions_.find(name);
    return it == functions_.end() ? nullptr : &it->second;
}

const TypePtr* TypeEnvironment::variable(std::string_view name) const {
    const auto it = variables_.find(name);
    return it == variables_.end() ? nullptr : &it->second;
}

bool TypeEnvironment::hasObject(std::string_view object) const {
    return fields_.contains(object);
}

const TypePtr* TypeEnvironment::field(std::string_view object, std::string_view field) const {
    const auto it = fields_.find(object);
    if (it == fields_.end())
        return nullptr;
    const auto found = it->second.find(field);
    return found == it->second.end() ? nullptr : &found->second;
}

const DeclaredSize* TypeEnvironment::size(std::string_view path) const {
    const auto it = sizes_.find(path);
    return it == sizes_.end() ? nullptr : &it->second;
}

}  // namespace numadra::cel
