import COpenSSL

/// A failure inside OpenSSL while loading keys or certificates (not an input verdict).
public struct OpenSSLError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What was being attempted, followed by OpenSSL's reason when it gave one.
    public var message: String

    /// Creates an error for `context`, appending and clearing this thread's OpenSSL error queue.
    public init(_ context: String) {
        let reason = Self.drainErrorQueue()
        message = reason.isEmpty ? context : "\(context): \(reason)"
    }

    /// A textual description, the same as ``message``.
    public var description: String { message }

    /// Returns the oldest queued OpenSSL error as text and clears this thread's queue.
    static func drainErrorQueue() -> String {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0 else { return "" }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
