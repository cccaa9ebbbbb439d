import Glibc
import GzipKit

extension EventLoop {
    // MARK: - Reading

    func readable(_ c: Connection) {
        if c.phase == .lingering {
            while true {
                let n = recv(c.fd, readBuffer, readBufferSize, 0)
                if n > 0 { continue }
                if n < 0 && (errno == EAGAIN || errno == EINTR) { return }
                closeConnection(c)
                return
            }
        }
        var reads = 0
        while reads < 4 && !c.stopReading && !c.backlogged && !c.awaitingAdmission && !c.peerClosed {
            let n = recv(c.fd, readBuffer, readBufferSize, 0)
            if n > 0 {
                reads += 1
                c.idleDeadline = nil
                if c.inbound.isEmpty {
                    process(c, UnsafeBufferPointer(start: readBuffer, count: n))
                } else {
                    c.inbound.append(contentsOf: UnsafeBufferPointer(start: readBuffer, count: n))
                    processInbound(c)
                }
                if n < readBufferSize { break }
            } else if n == 0 {
                peerShutWrite(c)
                if c.handle.closed.load(ordering: .relaxed) { return }
                break
            } else {
                let e = errno
                if e == EAGAIN || e == EINTR { break }
                closeConnection(c)
                return
            }
        }
        pump(c)
    }

    /// The peer sent its last byte (a half-close, or a full close the server cannot tell
    /// apart): requests already received are still answered and written, in order, and
    /// then the connection closes; an incomplete one is dropped. Nothing in flight: closes now.
    private func peerShutWrite(_ c: Connection) {
        c.peerClosed = true
        c.stopReading = true
        c.currentHead = nil
        c.inbound = []
        if c.slots.isEmpty && !c.hasUnsentOutput { closeConnection(c) }
    }

    func processInbound(_ c: Connection) {
        let data = c.inbound
        c.inbound = []
        data.withUnsafeBufferPointer { process(c, $0, original: data) }
    }

    /// Parses and dispatches as many requests from `bytes` as allowed; keeps the rest.
    func process(_ c: Connection, _ bytes: UnsafeBufferPointer<UInt8>, original: [UInt8]? = nil) {
        c.dispatching = true
        defer { c.dispatching = false }
        c.backlogged = false
        // The head whose body is awaited stays in a local while parsing and goes back to
        // the connection at the end: nothing reads it meanwhile, and each write of the
        // connection's copy costs a copy of the head and an exclusivity check.
        var current = c.currentHead
        if current != nil { c.currentHead = nil }
        var offset = 0
        parsing: while true {
            if c.stopReading || c.handle.closed.load(ordering: .relaxed) { offset = bytes.count; break }
            if c.awaitingAdmission { break }
            if current == nil {
                if core.isShuttingDown { c.stopReading = true; offset = bytes.count; break }
                if c.slots.count >= maxPipeline || c.outbound.count - c.outboundOffset >= maxBufferedOutput {
                    if offset < bytes.count { c.backlogged = true }
                    break
                }
            }
            let (n, result) = c.parser.parse(UnsafeBufferPointer(rebasing: bytes[offset...]))
            offset += n
            if c.bodyBytesHeld != c.parser.bufferedBodyBytes, !holdBodyBytes(c) {
                // The body budget is spent: this body is refused, whatever the result was.
                refuseBody(c, method: current?.method ?? "-", target: current?.target ?? "-",
                           ProblemResponse.make(status: 503, code: "service_unavailable",
                                                detail: "The server holds too many request bodies; retry shortly.",
                                                typePrefix: problemTypePrefix, headers: Self.retryShortly))
                current = nil
                offset = bytes.count
                break parsing
            }
            switch result {
            case .needMore:
                break parsing
            case .head(let head):
                c.headDeadline = nil
                if head.framing != .none {
                    let admission = core.handler.screen(head, remoteAddress: c.remoteAddress)
                    if case .later(let decide) = admission {
                        // The rest stays in `inbound` until the verdict (`admissionDecided`).
                        current = head
                        c.awaitingAdmission = true
                        c.bodyDeadline = now + core.configuration.bodyTimeout
                        awaitAdmission(c, head, decide)
                        break parsing
                    }
                    if let refusal = admitBody(c, head, admission) {
                        refuseBody(c, method: head.method, target: head.target, refusal)
                        offset = bytes.count
                        break parsing
                    }
                    c.bodyDeadline = now + core.configuration.bodyTimeout
                }
                if head.expectContinue && offset == bytes.count && c.slots.isEmpty && !c.hasUnsentOutput {
                    c.outbound.append(contentsOf: Self.continueLine)
                    c.bytesQueued += Self.continueLine.count
                }
                current = head
            case .end(let body):
                guard let head = current else { break parsing }
                current = nil
                if c.bodyDeadline != nil { c.bodyDeadline = nil }
                if !head.keepAlive { c.stopReading = true }
                dispatch(c, head, body)
            case .error(let error):
                current = nil
                enqueueError(c, ProblemResponse.make(for: error, typePrefix: problemTypePrefix))
                offset = bytes.count
                break parsing
            }
        }
        if current != nil { c.currentHead = current }
        if offset >= bytes.count {
            if !c.inbound.isEmpty { c.inbound = [] }
        } else if offset == 0, let original {
            c.inbound = original
        } else {
            c.inbound = Array(UnsafeBufferPointer(rebasing: bytes[offset...]))
        }
    }

    /// The start of the `type` of the server's own problems (`HTTPServerConfiguration.problemTypePrefix`).
    var problemTypePrefix: String { core.configuration.problemTypePrefix }

    static let continueLine: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
    static let retryShortly: HTTPHeaders = {
        var h = HTTPHeaders()
        h.set("Retry-After", "1")
        return h
    }()

    /// Asks for the verdict on `head` off the loop; it comes back to this loop as a task, after
    /// the parsing that asked has ended.
    private func awaitAdmission(_ c: Connection, _ head: HTTPRequestHead,
                                _ decide: @Sendable (@escaping @Sendable (BodyAdmission) -> Void) -> Void) {
        let handle = c.handle
        decide { verdict in
            self.enqueue(.run { self.admissionDecided(handle, head, verdict) })
        }
    }

    /// The verdict on a head screened off the loop: the body is read (what arrived meanwhile
    /// first) or refused unread, as `admitBody` would have decided at once.
    private func admissionDecided(_ handle: ConnectionHandle, _ head: HTTPRequestHead, _ verdict: BodyAdmission) {
        guard let c = connection(handle.fd), c.handle === handle, !handle.closed.load(ordering: .relaxed),
              c.phase == .open, c.awaitingAdmission, c.currentHead === head else { return }
        c.awaitingAdmission = false
        if let refusal = admitBody(c, head, verdict) {
            c.currentHead = nil
            c.inbound = []
            refuseBody(c, method: head.method, target: head.target, refusal)
        } else {
            if head.expectContinue && c.inbound.isEmpty && c.slots.isEmpty && !c.hasUnsentOutput {
                c.outbound.append(contentsOf: Self.continueLine)
                c.bytesQueued += Self.continueLine.count
            }
            if !c.inbound.isEmpty { processInbound(c) }
        }
        pump(c)
    }

    /// The handler's decision on a body announced by `head`, and the body budget's: nil to
    /// read it (with `c.bodyLimit` and the parser's limit set), or the answer that refuses it.
    private func admitBody(_ c: Connection, _ head: HTTPRequestHead, _ admission: BodyAdmission) -> HTTPResponse? {
        let serverLimit = core.configuration.maxBodyBytes
        switch admission {
        case .refuse(let response):
            return response
        case .read(let limit):
            c.bodyLimit = min(limit ?? serverLimit, serverLimit)
        case .later:
            // A verdict is `.read` or `.refuse`; another deferral reads within the server's limit.
            c.bodyLimit = serverLimit
        }
        if case .length(let n) = head.framing, n > c.bodyLimit {
            return ProblemResponse.make(for: .bodyTooLarge, typePrefix: problemTypePrefix)
        }
        if c.bodyLimit < serverLimit { c.parser.limitBody(to: c.bodyLimit) }
        if core.bufferedBodyBytes.load(ordering: .relaxed) >= core.configuration.maxBufferedBodyBytes {
            return ProblemResponse.make(status: 503, code: "service_unavailable",
                                        detail: "The server holds too many request bodies; retry shortly.",
                                        typePrefix: problemTypePrefix, headers: Self.retryShortly)
        }
        return nil
    }

    /// Brings the connection's share of the body budget to what its parser holds; false
    /// when that grew the total past the budget.
    func holdBodyBytes(_ c: Connection) -> Bool {
        let held = c.parser.bufferedBodyBytes
        let delta = held - c.bodyBytesHeld
        c.bodyBytesHeld = held
        let total = core.bufferedBodyBytes.add(delta, ordering: .relaxed).newValue
        return delta <= 0 || total <= core.configuration.maxBufferedBodyBytes
    }

    /// Answers a request whose body is not read, after any pending answers, and closes:
    /// input is no longer read (what the client still sends is discarded while lingering).
    private func refuseBody(_ c: Connection, method: String, target: String, _ response: HTTPResponse) {
        c.parser.abandonBody()
        _ = holdBodyBytes(c)
        c.stopReading = true
        c.bodyDeadline = nil
        let seq = c.nextSequence
        c.nextSequence += 1
        c.slots.append(.init(sequence: seq, method: method, path: HTTPRequest.split(target).path, isHead: false,
                             keepAlive: false, minorVersion: 1, acceptsGzip: false, startedAt: now,
                             response: response, forceClose: true))
    }

    /// Queues a generated error response after any pending ones and stops reading.
    func enqueueError(_ c: Connection, _ response: HTTPResponse) {
        c.stopReading = true
        let seq = c.nextSequence
        c.nextSequence += 1
        c.slots.append(.init(sequence: seq, method: "-", path: "-", isHead: false, keepAlive: false,
                             minorVersion: 1, acceptsGzip: false, startedAt: now, response: response, forceClose: true))
    }

    private func dispatch(_ c: Connection, _ head: HTTPRequestHead, _ rawBody: [UInt8]) {
        let seq = c.nextSequence
        c.nextSequence += 1
        let acceptsGzip = head.headers["Accept-Encoding"].map(ContentCoding.acceptsGzip) ?? false
        // A fresh reading: the request may complete late in an event that began much earlier.
        now = Self.monotonicNow()
        let (rawPath, rawQuery) = HTTPRequest.split(head.target)
        var slot = Connection.Slot(sequence: seq, method: head.method, path: rawPath,
                                   isHead: head.method == "HEAD", keepAlive: head.keepAlive,
                                   minorVersion: head.minorVersion, acceptsGzip: acceptsGzip,
                                   startedAt: now, response: nil, forceClose: false)
        var body = rawBody
        var headers = head.headers
        if let coding = headers["Content-Encoding"] {
            let lower = coding.trimmedOWS.lowercased()
            if lower == "gzip" || lower == "x-gzip" {
                do {
                    body = try Gzip.decompress(rawBody, limit: c.bodyLimit > 0 ? c.bodyLimit : core.configuration.maxBodyBytes)
                    headers.remove("Content-Encoding")
                } catch GzipError.tooLarge {
                    slot.response = ProblemResponse.make(for: .bodyTooLarge, typePrefix: problemTypePrefix)
                    slot.forceClose = true
                } catch {
                    slot.response = ProblemResponse.make(status: 400, code: "bad_request", detail: "The gzip request body is corrupt.",
                                                         typePrefix: problemTypePrefix)
                    slot.forceClose = true
                }
            } else if lower != "identity" {
                // RFC 9110 §15.5.16: 415, with Accept-Encoding naming the codings accepted.
                var refusal = ProblemResponse.make(status: 415, code: "unsupported_media_type",
                                                   detail: "Content-Encoding \(coding) is not supported; send gzip or identity.",
                                                   typePrefix: problemTypePrefix)
                refusal.headers.set("Accept-Encoding", "gzip")
                slot.response = refusal
            }
        }
        if slot.response != nil {
            if slot.forceClose { c.stopReading = true }
            c.slots.append(slot)
            return
        }
        c.slots.append(slot)
        var target = head.target, path = rawPath, query = rawQuery
        if target.utf8.first != UInt8(ascii: "/"), target.hasPrefix("http://") || target.hasPrefix("https://") {
            let afterScheme = target.utf8.firstRange(of: "://".utf8)!.upperBound
            if let slash = target.utf8[afterScheme...].firstIndex(of: UInt8(ascii: "/")) {
                target = String(target[slash...])
            } else {
                target = "/"
            }
            (path, query) = HTTPRequest.split(target)
        }
        let request = HTTPRequest(method: head.method, target: target, path: path, query: query,
                                  minorVersion: head.minorVersion, headers: headers, body: body,
                                  remoteAddress: c.remoteAddress)
        guard request.hasDecodableQuery else {
            c.slots[c.slots.count - 1].response = ProblemResponse.make(
                status: 400, code: "bad_request", detail: "The query string does not percent-decode to UTF-8.",
                typePrefix: problemTypePrefix)
            return
        }
        core.handler.handle(consume request, responder: ConnectionResponder(loop: self, handle: c.handle, sequence: seq))
    }

    // MARK: - Completing

    func complete(_ response: consuming HTTPResponse, handle: ConnectionHandle, sequence: UInt64) {
        guard let c = connection(handle.fd), c.handle === handle, c.phase == .open,
              let first = c.slots.first else { return }
        let i = Int(sequence &- first.sequence)
        guard i >= 0, i < c.slots.count, c.slots[i].sequence == sequence, !c.slots[i].isAnswered else { return }
        c.slots[i].response = consume response
        if !c.dispatching { pump(c) }
    }

    /// Encodes ready responses in order, writes, resumes a pipelined backlog, and refreshes
    /// interest and deadline.
    func pump(_ c: Connection) {
        while true {
            if c.handle.closed.load(ordering: .relaxed) { return }
            encodeReady(c)
            writeOut(c)
            if c.handle.closed.load(ordering: .relaxed) || c.phase == .lingering { return }
            if c.hasUnsentOutput { break }
            if c.closeAfterWrite {
                finish(c)
                return
            }
            if core.isShuttingDown && c.slots.isEmpty && c.currentHead == nil {
                closeConnection(c)
                return
            }
            if c.peerClosed && c.slots.isEmpty {
                closeConnection(c)
                return
            }
            if c.backlogged && c.slots.count < maxPipeline {
                processInbound(c)
                continue
            }
            break
        }
        updateInterest(c)
        updateDeadline(c)
    }

    private func encodeReady(_ c: Connection) {
        guard !c.closeAfterWrite else { return }
        while !c.slots.isEmpty && c.slots[0].isAnswered {
            // Moved out, not copied: the last slot (the usual case) without shifting.
            var first = c.slots.count == 1 ? c.slots.removeLast() : c.slots.removeFirst()
            let response = first.response.take()!
            let close = first.forceClose || !first.keepAlive
                || (core.isShuttingDown && c.slots.isEmpty && c.currentHead == nil)
                || (c.peerClosed && c.slots.isEmpty)
            let options = ResponseEncoder.Options(isHead: first.isHead, close: close,
                                                  announceKeepAlive: first.minorVersion == 0 && !close,
                                                  acceptsGzip: first.acceptsGzip,
                                                  compressionThreshold: core.configuration.compressionThreshold)
            let before = c.outbound.count
            let bodyBytes = ResponseEncoder.encode(response, options: options, fixedFields: date.fields,
                                                   into: &c.outbound)
            c.bytesQueued += c.outbound.count - before
            if core.configuration.accessLog != nil {
                c.logs.append(.init(endOffset: c.bytesQueued, entry: AccessLogEntry(
                    method: first.method, path: first.path, routeLabel: response.routeLabel, status: response.status,
                    bytes: bodyBytes, duration: first.startedAt, remoteAddress: response.clientAddress ?? c.remoteAddress,
                    routeIndex: response.routeIndex)))
            }
            if close {
                c.closeAfterWrite = true
                c.slots.removeAll()
                break
            }
        }
    }

    func writeOut(_ c: Connection) {
        guard c.phase == .open else { return }
        var progressed = false
        while c.outboundOffset < c.outbound.count {
            let n = c.outbound.withUnsafeBytes { p in
                send(c.fd, p.baseAddress! + c.outboundOffset, p.count - c.outboundOffset, Int32(MSG_NOSIGNAL))
            }
            if n > 0 {
                c.outboundOffset += n
                c.bytesWritten += n
                progressed = true
            } else if n < 0 && errno == EINTR {
                continue
            } else if n < 0 && errno == EAGAIN {
                break
            } else {
                closeConnection(c)
                return
            }
        }
        if progressed {
            c.writeDeadline = nil
            if !c.logs.isEmpty, let log = core.configuration.accessLog, c.logs[0].endOffset <= c.bytesWritten {
                // One fresh reading for every response this write completed. The list is
                // taken from the connection while it is walked (one access, no copies).
                now = Self.monotonicNow()
                var logs: [Connection.PendingLog] = []
                swap(&logs, &c.logs)
                var done = 0
                while done < logs.count && logs[done].endOffset <= c.bytesWritten {
                    logs[done].entry.duration = max(0, now - logs[done].entry.duration)
                    log(logs[done].entry)
                    done += 1
                }
                if done == logs.count { logs.removeAll(keepingCapacity: true) } else { logs.removeFirst(done) }
                swap(&logs, &c.logs)
            }
        }
        if c.outboundOffset >= c.outbound.count && !c.outbound.isEmpty {
            c.outboundOffset = 0
            if c.outbound.capacity > 64 * 1024 { c.outbound = [] } else { c.outbound.removeAll(keepingCapacity: true) }
        }
        if !c.dispatching && c.interest.contains(.write) != c.hasUnsentOutput {
            updateInterest(c)
            updateDeadline(c)
        }
        if !c.hasUnsentOutput && c.closeAfterWrite && !c.dispatching && progressed {
            finish(c)
        }
    }

    /// The last response is written: shut the write side and discard input for a moment,
    /// so the peer reads the response instead of a reset.
    private func finish(_ c: Connection) {
        guard c.phase == .open, !c.handle.closed.load(ordering: .relaxed) else { return }
        if c.peerClosed || core.isShuttingDown {
            closeConnection(c)
            return
        }
        shutdown(c.fd, Int32(SHUT_WR))
        c.phase = .lingering
        c.inbound = []
        c.lingerDeadline = now + lingerTime
        updateInterest(c)
        updateDeadline(c)
    }
}
