import LedgerModel

/// `If-Match` handling: a strong comparison against the resource's current `changeTag`.
enum Preconditions {
    static func check(ifMatch: String?, currentTag: String, current: JSONValue) throws {
        guard let ifMatch = ifMatch?.trimmingCharacters(in: .whitespaces), !ifMatch.isEmpty else { return }
        if ifMatch == "*" { return }
        let tags = ifMatch.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let matches = tags.contains { t in
            !t.hasPrefix("W/") && (t == "\"\(currentTag)\"" || t == currentTag)
        }
        if !matches {
            var e = APIError(412, "precondition_failed", "The resource changed since you read it (If-Match did not match).")
            e.extra["current"] = current
            e.headers.set("ETag", "\"\(currentTag)\"")
            throw e
        }
    }
}
