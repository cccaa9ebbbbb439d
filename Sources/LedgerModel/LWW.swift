/// The last-writer-wins rule for child records: compare `modifiedAt`, then `modifiedBy`.
public enum LWW {
    /// True when version `a` wins over version `b` (strictly newer, ties broken by modifiedBy).
    public static func wins(_ a: (modifiedAt: Int64, modifiedBy: String),
                            over b: (modifiedAt: Int64, modifiedBy: String)) -> Bool {
        if a.modifiedAt != b.modifiedAt { return a.modifiedAt > b.modifiedAt }
        return a.modifiedBy > b.modifiedBy
    }

    /// The `modifiedAt` a device stamps on an edit: max(now, newest seen + 1 ms), never
    /// after 9999-12-31T23:59:59.999Z (`Timestamp.maxMs`, the last instant RFC 3339 writes).
    public static func stamp(now: Int64, newestSeen: Int64?) -> Int64 {
        guard let newestSeen else { return now }
        return min(max(now, newestSeen &+ 1), max(now, Timestamp.maxMs))
    }
}
