#include "numadra/metrics/registry.hpp"

#include <cstdio>
#include <sstream>
#include <stdexcept>

namespace numadra::metrics {

namespace {

std::string escapeLabel(const std::string& value) {
    std::string out;
    for (char c : value) {
        if (c == '\\' || c == '"')
            out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out;
}

std::string number(double value) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.17g", value);
    return buffer;
}

std::string labelText(const std::vector<std::string>& names, const Labels& values,
                      const std::string& extra = {}) {
    std::string out;
    for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
        out += (out.empty() ? "" : ",") + names[i] + "=\"" + escapeLabel(values[i]) + "\"";
    }
    if (!extra.empty())
        out += (out.empty() ? "" : ",") + extra;
    return out.empty() ? out : "{" + out + "}";
}

}  // namespace

std::vector<double> latencyBuckets() {
    return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
            0.1,    0.25,    0.5,    1,     2.5,    5,     10,   45};
}

void Registry::declareCounter(const std::string& name, const std::string& help,
                              std::vector<std::string> labelNames) {
    std::lock_guard lock(mutex_);
    families_[name] = Family{Kind::Counter, help, std::move(labelNames), {}, {}};
}

void Registry::declareGauge(const std::string& name, const std::string& help,
                            std::vector<std::string> labelNames) {
    std::lock_guard lock(mutex_);
    families_[name] = Family{Kind::Gauge, help, std::move(labelNames), {}, {}};
}

void Registry::declareHistogram(const std::string& name, const std::string& help,
                                std::vector<std::string> labelNames, std::vector<double> buckets) {
    std::lock_guard lock(mutex_);
    families_[name] = Family{Kind::Histogram, help, std::move(labelNames), std::move(buckets), {}};
}

Registry::Family& Registry::family(const std::string& name, Kind kind) {
    auto it = families_.find(name);
    // Using an undeclared metric is a programming error, not a runtime condition.
    if (it == families_.end() || it->second.kind != kind)
        throw std::logic_error("metric not declared: " + name);
    return it->second;
}

void Registry::counterAdd(const std::string& name, const Labels& labels, double value) {
    std::lock_guard lock(mutex_);
    family(name, Kind::Counter).series[labels].value += value;
}

void Registry::gaugeSet(const std::string& name, const Labels& labels, double value) {
    std::lock_guard lock(mutex_);
    family(name, Kind::Gauge).series[labels].value = value;
}

void Registry::gaugeClear(const std::string& name) {
    std::lock_guard lock(mutex_);
    family(name, Kind::Gauge).series.clear();
}

void Registry::histogramObserve(const std::string& name, const Labels& labels, double value) {
    std::lock_guard lock(mutex_);
    Family& f = family(name, Kind::Histogram);
    Series& s = f.series[labels];
    if (s.bucketCounts.empty())
        s.bucketCounts.assign(f.buckets.size(), 0);
    for (size_t i = 0; i < f.buckets.size(); ++i) {
        if (value <= f.buckets[i])
            ++s.bucketCounts[i];
    }
    ++s.count;
    s.sum += value;
}

double Registry::value(const std::string& name, const Labels& labels) const {
    std::lock_guard lock(mutex_);
    auto it = families_.find(name);
    if (it == families_.end())
        return 0;
    auto series = it->second.series.find(labels);
    if (series == it->second.series.end())
        return 0;
    return it->second.kind == Kind::Histogram ? static_cast<double>(series->second.count)
                                              : series->second.value;
}

std::string Registry::render() const {
    std::lock_guard lock(mutex_);
    std::ostringstream out;
    for (const auto& [name, f] : families_) {
        const char* type = f.kind == Kind::Counter ? "counter"
                           : f.kind == Kind::Gauge ? "gauge"
                                                   : "histogram";
        out << "# HELP " << name << " " << f.help << "\n# TYPE " << name << " " << type << "\n";
        for (const auto& [labels, s] : f.series) {
            if (f.kind != Kind::Histogram) {
                out << name << labelText(f.labelNames, labels) << " " << number(s.value) << "\n";
                continue;
            }
            for (size_t i = 0; i < f.buckets.size(); ++i) {
                out << name << "_bucket"
                    << labelText(f.labelNames, labels, "le=\"" + number(f.buckets[i]) + "\"") << " "
                    << s.bucketCounts[i] << "\n";
            }
            out << name << "_bucket" << labelText(f.labelNames, labels, "le=\"+Inf\"") << " "
                << s.count << "\n";
            out << name << "_sum" << labelText(f.labelNames, labels) << " " << number(s.sum)
                << "\n";
            out << name << "_count" << labelText(f.labelNames, labels) << " " << s.count << "\n";
        }
    }
    return out.str();
}

}  // namespace numadra::metrics
