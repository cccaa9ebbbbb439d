/// The framing-relevant facts of a parsed request head. A class of constants: the event
/// loop hands a head on between parsing steps, and a copy of a struct of this many fields
/// (retaining each) costs more than the reference.
public final class HTTPRequestHead: Sendable {
    /// How the body is delimited.
    public enum BodyFraming: Sendable, Equatable {
        case none
        /// `Content-Length` bytes.
        case length(Int)
        /// `Transfer-Encoding: chunked`.
        case chunked
    }

    public let method: String
    public let target: String
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    public let minorVersion: Int
    public let headers: HTTPHeaders
    public let framing: BodyFraming
    /// Whether the connection may stay open after this request (HTTP/1.1 default, or
    /// HTTP/1.0 with `Connection: keep-alive`; false with `Connection: close`).
    public let keepAlive: Bool
    /// `Expect: 100-continue` was sent by an HTTP/1.1 client with a body (HTTP/1.0 clients'
    /// expectations are ignored, RFC 9110 §10.1.1).
    public let expectContinue: Bool
    /// Total bytes of the head including the final empty line.
    public let headLength: Int

    public init(method: String, target: String, minorVersion: Int, headers: HTTPHeaders,
                framing: BodyFraming, keepAlive: Bool, expectContinue: Bool, headLength: Int) {
        self.method = method
        self.target = target
        self.minorVersion = minorVersion
        self.headers = headers
        self.framing = framing
        self.keepAlive = keepAlive
        self.expectContinue = expectContinue
        self.headLength = headLength
    }
}
