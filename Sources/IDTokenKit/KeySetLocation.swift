import Foundation

/// Where a provider's key set (JWKS) is read from.
public enum KeySetLocation: Sendable, Hashable, CustomStringConvertible {
    /// Fetched over HTTPS (plain HTTP only to a loopback host: tests, a local reverse proxy).
    case url(URL)
    /// Read from a file (an absolute path).
    case file(String)

    /// Apple's published key set for Sign in with Apple.
    public static let apple = KeySetLocation.url(URL(string: "https://appleid.apple.com/auth/keys")!)

    /// Reads a flag's `URL|FILE`: `https://…` (or `http://` to 127.0.0.1, ::1 or localhost)
    /// is a URL, `file://…` and anything else a path, made absolute against the working folder.
    public init(parsing text: String) throws(ProviderSpecError) {
        guard !text.isEmpty else { throw ProviderSpecError("the key set location is empty") }
        let lowered = text.lowercased()
        if lowered.hasPrefix("https://") || lowered.hasPrefix("http://") {
            guard let url = URL(string: text), let host = url.host, !host.isEmpty else {
                throw ProviderSpecError("\(text) is not a valid URL")
            }
            guard Self.isAllowed(url) else {
                throw ProviderSpecError("\(text): key sets are fetched over https (http only from a loopback host)")
            }
            self = .url(url)
        } else if lowered.hasPrefix("file://") {
            guard let url = URL(string: text), url.isFileURL, !url.path.isEmpty else {
                throw ProviderSpecError("\(text) is not a valid file URL")
            }
            self = .file(url.standardizedFileURL.path)
        } else if text.contains("://") {
            throw ProviderSpecError("\(text): a key set is an https URL or a file")
        } else {
            self = .file(URL(fileURLWithPath: text).standardizedFileURL.path)
        }
    }

    /// Whether keys may come from `url`: https, or http to a loopback host.
    static func isAllowed(_ url: URL) -> Bool {
        switch url.scheme?.lowercased() {
        case "https": return true
        case "http": return ["127.0.0.1", "::1", "[::1]", "localhost"].contains(url.host?.lowercased() ?? "")
        default: return false
        }
    }

    public var description: String {
        switch self {
        case .url(let url): return url.absoluteString
        case .file(let path): return path
        }
    }
}
