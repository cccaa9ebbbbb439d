import Glibc

/// epoll, eventfd and accept4, which the Glibc module does not export, bound at run time from libc.
enum LinuxEpoll {
    typealias CreateFn = @convention(c) (Int32) -> Int32
    typealias CtlFn = @convention(c) (Int32, Int32, Int32, UnsafeMutableRawPointer?) -> Int32
    typealias WaitFn = @convention(c) (Int32, UnsafeMutableRawPointer?, Int32, Int32) -> Int32
    typealias EventFdFn = @convention(c) (UInt32, Int32) -> Int32
    typealias Accept4Fn = @convention(c) (Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?, Int32) -> Int32

    static let IN: UInt32 = 0x001
    static let OUT: UInt32 = 0x004
    static let ERR: UInt32 = 0x008
    static let HUP: UInt32 = 0x010
    static let RDHUP: UInt32 = 0x2000
    static let EXCLUSIVE: UInt32 = 1 << 28
    static let ET: UInt32 = 1 << 31
    static let CLOEXEC: Int32 = 0o2000000
    static let CTL_ADD: Int32 = 1
    static let CTL_DEL: Int32 = 2
    static let CTL_MOD: Int32 = 3
    static let EFD_NONBLOCK: Int32 = 0o4000
    static let EFD_CLOEXEC: Int32 = 0o2000000

    #if arch(x86_64)
    /// `struct epoll_event` is packed on x86-64: u32 events, u64 data.
    static let eventSize = 12
    static let dataOffset = 4
    #else
    static let eventSize = 16
    static let dataOffset = 8
    #endif

    struct Functions: @unchecked Sendable {
        let create: CreateFn
        let ctl: CtlFn
        let wait: WaitFn
        let eventfd: EventFdFn
        let accept4: Accept4Fn
    }

    /// nil when libc lacks epoll (not Linux).
    static let functions: Functions? = {
        guard let handle = dlopen(nil, RTLD_NOW),
              let c = dlsym(handle, "epoll_create1"), let t = dlsym(handle, "epoll_ctl"),
              let w = dlsym(handle, "epoll_wait"), let e = dlsym(handle, "eventfd"),
              let a = dlsym(handle, "accept4") else { return nil }
        return Functions(create: unsafeBitCast(c, to: CreateFn.self), ctl: unsafeBitCast(t, to: CtlFn.self),
                         wait: unsafeBitCast(w, to: WaitFn.self), eventfd: unsafeBitCast(e, to: EventFdFn.self),
                         accept4: unsafeBitCast(a, to: Accept4Fn.self))
    }()
}
