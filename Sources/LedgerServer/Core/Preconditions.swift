import LedgerModel

/// `If-Match` handling: a strong comparison against the resource's current `changeTag`.
enum Preconditions {
    static func check(ifMatch: String?, currentTag: String, current: JSONValue) throws {
        if !matches(ifMatch: ifMatch)(currentTag) { throw failed(currentTag: currentTag, current: current) }
    }

    /// Whether a resource whose tag is the argument satisfies `If-Match` (absent and `*`
    /// match everything; weak tags never match).
    static func matches(ifMatch: String?) -> @Sendable (String) -> Bool {
        guard let ifMatch = ifMatch?.trimmingCharacters(in: .whitespaces), !ifMatch.isEmpty, ifMatch != "*" else {
            return { _ in true }
        }
        let tags = ifMatch.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        return { currentTag in tags.contains { t in !t.hasPrefix("W/") && (t == "\"\(currentTag)\"" || t == currentTag) } }
    }

    /// 412 with the current version of the resource.
    static func failed(currentTag: String, current: JSONValue) -> APIError {
        var e = APIError(412, "precondition_failed", "The resource changed since you read it (If-Match did not match).")
        e.extra["current"] = current
        e.headers.set("ETag", "\"\(currentTag)\"")
        return e
    }
}
