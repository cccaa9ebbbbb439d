import LedgerCore
import LedgerModel

extension RequestContext {
    /// A paged list, `{"items": […], "nextCursor": …}`: up to the request's `limit` items
    /// (default 100, at most 1000) after its `cursor`, which must be one `list` gave out
    /// (`list` names the list and whose it is). `read` reads the page in one snapshot.
    func list<Item, Position: CursorPosition>(_ list: String,
                                              read: (any LedgerReading, Position?, Int) throws -> KeyedPage<Item, Position>,
                                              item: (Item) -> JSONValue) throws -> Reply {
        let limit = try self.limit()
        let cursors = services.cursors
        let after: Position? = try cursors.position(request.queryValue("cursor"), list: list)
        let page = try self.read { try read($0, after, limit) }
        return json(200, .object(["items": .array(page.items.map(item)),
                                  "nextCursor": page.next.map { .string(cursors.encode(list: list, $0)) } ?? .null]))
    }
}
