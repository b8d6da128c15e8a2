#pragma once
// Prometheus metrics in the text exposition format: counters, gauges and histograms with a
// fixed set of label names each. Thread-safe; values live as long as the registry.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace numadra::metrics {

using Labels = std::vector<std::string>;  // values, in the order of the family's label names

class Registry {
  public:
    void counterAdd(const std::string& name, const Labels& labels = {}, double value = 1);
    void gaugeSet(const std::string& name, const Labels& labels, double value);
    void histogramObserve(const std::string& name, const Labels& labels, double value);

    // Families must be declared before use (name, help, label names; buckets for histograms).
    void declareCounter(const std::string& name, const std::string& help,
                        std::vector<std::string> labelNames = {});
    void declareGauge(const std::string& name, const std::string& help,
                      std::vector<std::string> labelNames = {});
    void declareHistogram(const std::string& name, const std::string& help,
                          std::vector<std::string> labelNames, std::vector<double> buckets);
    // Drops every series of a gauge family (before re-setting the current ones).
    void gaugeClear(const std::string& name);

    std::string render() const;
    double value(const std::string& name,
                 const Labels& labels = {}) const;  // counters and gauges, for tests

  private:
    enum class Kind { Counter, Gauge, Histogram };
    struct Series {
        double value = 0;
        std::vector<std::uint64_t> bucketCounts;
        std::uint64_t count = 0;
        double sum = 0;
    };
    struct Family {
        Kind kind;
        std::string help;
        std::vector<std::string> labelNames;
        std::vector<double> buckets;
        std::map<Labels, Series> series;
    };
    Family& family(const std::string& name, Kind kind);
    mutable std::mutex mutex_;
    std::map<std::string, Family> families_;
};

// Seconds buckets for call latencies, 100 µs to 45 s (the kubelet's per-call timeout).
std::vector<double> latencyBuckets();

}  // namespace numadra::metrics
