#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Names the calling thread for the system: `top -H`, `/proc/<pid>/task/<tid>/comm`, perf
/// and gdb show it (Foundation's `Thread.name` does not reach the system on Linux). Linux
/// keeps 15 bytes; a longer name is cut there. Names are ASCII.
public func nameCurrentThread(_ name: String) {
    let short = Array(name.utf8.prefix(15))
    #if canImport(Glibc)
    // pthread_setname_np is not in Swift's view of Glibc; this file is what it writes.
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }
    _ = short.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
    #elseif canImport(Darwin)
    _ = pthread_setname_np(String(decoding: short, as: UTF8.self))
    #endif
}
