#pragma once
// The body of one API answer, with a hard size limit, kept in pages mapped for it alone.
//
// Why not a std::string: a body grows by doubling, and glibc serves the big sizes from its
// arenas once it has seen one freed (its mmap threshold rises with every large free), so a
// single huge answer leaves its high-water mark in the process for good. Pages mapped here go
// back to the kernel the moment the body is dropped, whatever malloc has seen. The mapping is
// made on the first byte and only the pages written are ever resident.

#include <cstddef>
#include <string_view>

namespace numadra::kube::detail {

class ResponseBody {
  public:
    explicit ResponseBody(std::size_t limit) : limit_(limit) {}
    ~ResponseBody();
    ResponseBody(ResponseBody&& other) noexcept;
    ResponseBody& operator=(ResponseBody&& other) noexcept;
    ResponseBody(const ResponseBody&) = delete;
    ResponseBody& operator=(const ResponseBody&) = delete;

    enum class Append { Ok, OverLimit, NoMemory };
    // All of `data` or nothing: OverLimit when the body would pass its limit.
    Append append(std::string_view data);

    std::string_view view() const { return {data_, size_}; }
    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    std::size_t limit() const { return limit_; }

  private:
    void release() noexcept;

    std::size_t limit_ = 0;
    char* data_ = nullptr;
    std::size_t size_ = 0;
};

}  // namespace numadra::kube::detail
