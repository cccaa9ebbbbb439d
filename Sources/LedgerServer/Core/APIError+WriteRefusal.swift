import LedgerCore

/// A handler's refusal inside a write body (such as a service that is not configured) is
/// decided before the body writes anything.
extension APIError: WriteRefusal {}
