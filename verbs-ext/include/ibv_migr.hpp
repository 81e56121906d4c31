// ibv_migr.hpp - a small C++20 wrapper over ibv_migr.h (header only).
// Errors are thrown as std::system_error carrying the errno.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <system_error>
#include <vector>

#include "ibv_migr.h"

namespace crx::verbs {

[[noreturn]] inline void throw_migr(int negative_errno, const std::string& what)
{
    throw std::system_error(-negative_errno, std::generic_category(), what);
}

// One consistent snapshot of every object of a context.
class ContextDump {
public:
    // Dump ctx; with stop (the default) all its QPs are stopped first.
    static ContextDump take(ibv_context* ctx, bool stop = true)
    {
        ContextDump d;
        unsigned flags = stop ? 0u : IBV_MIGR_DUMP_NO_STOP;
        void* raw = nullptr;
        std::size_t length = 0;
        if (int err = ibv_dump_context_alloc(ctx, &d.count_, &raw, &length, flags))
            throw_migr(err, "ibv_dump_context");
        const auto* p = static_cast<const std::byte*>(raw);
        d.bytes_.assign(p, p + length);
        std::free(raw);
        return d;
    }

    // A dump read back from storage; validated.
    static ContextDump from_bytes(std::vector<std::byte> bytes)
    {
        ContextDump d;
        d.bytes_ = std::move(bytes);
        if (int err = ibv_migr_check_dump(d.bytes_.data(), d.bytes_.size()))
            throw_migr(err, "malformed rxe dump");
        d.count_ = static_cast<int>(
            reinterpret_cast<const rxe_migr_dump_hdr*>(d.bytes_.data())->count);
        return d;
    }

    const std::vector<std::byte>& bytes() const { return bytes_; }
    int count() const { return count_; }

    // The records in restore order.
    std::vector<const rxe_migr_rec_hdr*> records() const
    {
        std::vector<const rxe_migr_rec_hdr*> out;
        const rxe_migr_rec_hdr* r = nullptr;
        int err = 0;
        while ((r = ibv_migr_next_record(bytes_.data(), bytes_.size(), r, &err)))
            out.push_back(r);
        if (err)
            throw_migr(err, "malformed rxe dump");
        return out;
    }

private:
    std::vector<std::byte> bytes_;
    int count_ = 0;
};

// ibv_restore_object with exceptions; returns the object for CREATE.
inline void* restore_object(ibv_context* ctx, int type, int cmd, ibv_restore_args args,
                            void* object = nullptr)
{
    if (int err = ibv_restore_object(ctx, &object, type, cmd, &args, sizeof(args)))
        throw_migr(err, "ibv_restore_object type " + std::to_string(type) + " cmd " +
                            std::to_string(cmd));
    return object;
}

// Which dump record (async event fd / completion channel) is the caller's
// fd? type 0: none of ctx's event fds.
inline ibv_migr_fd_info identify_fd(ibv_context* ctx, int fd)
{
    ibv_migr_fd_info info{};
    if (int err = ibv_migr_identify_fd(ctx, fd, &info))
        throw_migr(err, "ibv_migr_identify_fd " + std::to_string(fd));
    return info;
}

// Releases the handle placeholders of ctx when the restore is over.
class RestoreSession {
public:
    explicit RestoreSession(ibv_context* ctx) : ctx_(ctx) {}
    RestoreSession(const RestoreSession&) = delete;
    RestoreSession& operator=(const RestoreSession&) = delete;
    ~RestoreSession() { ibv_restore_object(ctx_, nullptr, 0, IBV_RESTORE_FINISH, nullptr, 0); }

private:
    ibv_context* ctx_;
};

}  // namespace crx::verbs
