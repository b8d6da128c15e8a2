#pragma once
// Concurrent calls for one key share one run of the work, as Go's singleflight: the kubelet
// asks for a claim again while the first fetch is still on its way (a retry, two pods sharing
// the claim), and the API server should see one GET, not one per caller.
//
// Each caller waits no longer than its own deadline. A caller joins a run only if that run may
// go on at least as long as the caller would (its starter's deadline is no earlier), since a
// run is given up at its starter's deadline and must not cut a later caller short; otherwise
// the caller starts its own run, which later callers join.

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace numadra {

template <class Value>
class SingleFlight {
  public:
    using Clock = std::chrono::steady_clock;

    struct Outcome {
        std::optional<Value> value;  // nullopt: the deadline passed while waiting for another run
        bool shared = false;         // the value came from a run another caller started
    };

    // Runs `work` (which must respect `deadline` itself), or waits for a run of it already under
    // way for `key`. An exception from `work` reaches every caller of that run.
    Outcome run(const std::string& key, Clock::time_point deadline,
                const std::function<Value()>& work) {
        // Not a structured binding: clang before 16 cannot capture one in a lambda.
        const auto joined = join(key, deadline);
        const std::shared_ptr<Flight>& flight = joined.first;
        if (joined.second)
            return Outcome{fly(key, flight, work), false};
        std::unique_lock lock(flight->mutex);
        if (!flight->landed.wait_until(lock, deadline, [&] { return flight->done; }))
            return Outcome{std::nullopt, true};
        if (flight->failure)
            std::rethrow_exception(flight->failure);
        return Outcome{flight->value, true};
    }

    // Runs under way (for tests and metrics).
    std::size_t inFlight() const {
        std::lock_guard lock(mutex_);
        return flights_.size();
    }

    // Callers of the run under way for `key` (its starter included); 0 when there is none.
    std::size_t callers(const std::string& key) const {
        std::lock_guard lock(mutex_);
        const auto found = flights_.find(key);
        return found == flights_.end() ? 0 : found->second->callers;
    }

  private:
    struct Flight {
        explicit Flight(Clock::time_point until) : deadline(until) {}
        const Clock::time_point deadline;
        std::size_t callers = 1;  // under SingleFlight::mutex_
        std::mutex mutex;
        std::condition_variable landed;
        bool done = false;
        std::optional<Value> value;
        std::exception_ptr failure;
    };

    std::pair<std::shared_ptr<Flight>, bool> join(const std::string& key,
                                                  Clock::time_point deadline) {
        std::lock_guard lock(mutex_);
        auto& current = flights_[key];
        if (current && current->deadline >= deadline) {
            ++current->callers;
            return {current, false};
        }
        // None, or one that ends too early for this caller: this run becomes the one to join.
        current = std::make_shared<Flight>(deadline);
        return {current, true};
    }

    Value fly(const std::string& key, const std::shared_ptr<Flight>& flight,
              const std::function<Value()>& work) {
        std::optional<Value> value;
        std::exception_ptr failure;
        try {
            value.emplace(work());
        } catch (...) {
            failure = std::current_exception();
        }
        {
            std::lock_guard lock(mutex_);
            const auto found = flights_.find(key);
            if (found != flights_.end() && found->second == flight)
                flights_.erase(found);
        }
        {
            std::lock_guard lock(flight->mutex);
            flight->done = true;
            flight->value = value;
            flight->failure = failure;
        }
        flight->landed.notify_all();
        if (failure)
            std::rethrow_exception(failure);
        return std::move(*value);
    }

    mutable std::mutex mutex_;
    std::map<std::string, std::shared_ptr<Flight>> flights_;
};

}  // namespace numadra
