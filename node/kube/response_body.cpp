#include "response_body.hpp"

#include <sys/mman.h>

#include <cstring>
#include <utility>

namespace numadra::kube::detail {

ResponseBody::~ResponseBody() {
    release();
}

ResponseBody::ResponseBody(ResponseBody&& other) noexcept
    : limit_(other.limit_),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

ResponseBody& ResponseBody::operator=(ResponseBody&& other) noexcept {
    if (this != &other) {
        release();
        limit_ = other.limit_;
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

ResponseBody::Append ResponseBody::append(std::string_view data) {
    if (data.empty())
        return Append::Ok;
    if (data.size() > limit_ - size_)
        return Append::OverLimit;
    if (data_ == nullptr) {
        // Address space for the whole limit, no memory: pages become resident as they are
        // written, and MAP_NORESERVE keeps a few megabytes of promise out of the commit charge.
        void* mapped = ::mmap(nullptr, limit_, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (mapped == MAP_FAILED)
            return Append::NoMemory;
        data_ = static_cast<char*>(mapped);
    }
    std::memcpy(data_ + size_, data.data(), data.size());
    size_ += data.size();
    return Append::Ok;
}

void ResponseBody::release() noexcept {
    if (data_ != nullptr)
        ::munmap(data_, limit_);
    data_ = nullptr;
    size_ = 0;
}

}  // namespace numadra::kube::detail
