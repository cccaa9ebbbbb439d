import Glibc

/// Thin helpers over POSIX sockets.
enum Socket {
    struct Failure: Error, CustomStringConvertible {
        var operation: String
        var errno: Int32
        var description: String { "\(operation) failed: \(String(cString: strerror(errno)))" }
    }

    /// A bound, listening, non-blocking socket. `host` is an IPv4 or IPv6 literal or `localhost`.
    static func listen(host: String, port: Int, backlog: Int32 = 4096) throws -> (fd: Int32, port: Int) {
        let literal = host == "localhost" ? "127.0.0.1" : host
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        let family: Int32
        if inet_pton(AF_INET, literal, &v4.sin_addr) == 1 {
            family = AF_INET
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = UInt16(truncatingIfNeeded: port).bigEndian
        } else if inet_pton(AF_INET6, literal.trimmingBrackets, &v6.sin6_addr) == 1 {
            family = AF_INET6
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = UInt16(truncatingIfNeeded: port).bigEndian
        } else {
            throw Failure(operation: "parse address \(host)", errno: EINVAL)
        }
        let fd = socket(family, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(operation: "socket", errno: errno) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let rc: Int32
        if family == AF_INET {
            rc = withUnsafePointer(to: &v4) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        } else {
            rc = withUnsafePointer(to: &v6) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
        if rc != 0 {
            let e = errno
            close(fd)
            throw Failure(operation: "bind \(host):\(port)", errno: e)
        }
        if Glibc.listen(fd, backlog) != 0 {
            let e = errno
            close(fd)
            throw Failure(operation: "listen", errno: e)
        }
        var storage = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        return (fd, Self.port(of: storage))
    }

    static func port(of storage: sockaddr_storage) -> Int {
        var storage = storage
        return withUnsafePointer(to: &storage) { p -> Int in
            if Int32(p.pointee.ss_family) == AF_INET {
                return p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
            }
            return p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
        }
    }

    /// The textual IP address of a peer, e.g. `127.0.0.1` or `::1`.
    static func addressString(_ storage: sockaddr_storage) -> String {
        var storage = storage
        var buffer = [CChar](repeating: 0, count: 64)
        withUnsafePointer(to: &storage) { p in
            if Int32(p.pointee.ss_family) == AF_INET {
                p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                    var addr = sin.pointee.sin_addr
                    _ = inet_ntop(AF_INET, &addr, &buffer, 64)
                }
            } else if Int32(p.pointee.ss_family) == AF_INET6 {
                p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin in
                    var addr = sin.pointee.sin6_addr
                    _ = inet_ntop(AF_INET6, &addr, &buffer, 64)
                }
            }
        }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }
}

extension String {
    fileprivate var trimmingBrackets: String {
        if hasPrefix("["), hasSuffix("]") { return String(dropFirst().dropLast()) }
        return self
    }
}
