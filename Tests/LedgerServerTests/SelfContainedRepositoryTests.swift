import Foundation
import XCTest

/// The repository is all a test, script, fuzz target or benchmark may read: a clone, a fork
/// or a package build has nothing beside it. Fails when a tracked file names the folder
/// beside the repository that the App Store test material once came from.
final class SelfContainedRepositoryTests: XCTestCase {
    /// Spelled in pieces, so that this file does not name them itself.
    private let needles = [".." + "/" + "shared", "shared" + "/" + "vectors"]

    func testNoTrackedFileNamesAFolderOutsideTheRepository() throws {
        let thisFile = URL(fileURLWithPath: #filePath)
        let root = thisFile.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        guard FileManager.default.fileExists(atPath: root.appendingPathComponent(".git").path) else {
            throw XCTSkip("not a git checkout: no list of tracked files")
        }
        let git = Process()
        git.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        git.arguments = ["git", "-C", root.path, "ls-files", "-z"]
        let output = Pipe()
        git.standardOutput = output
        try git.run()
        let listing = output.fileHandleForReading.readDataToEndOfFile()
        git.waitUntilExit()
        XCTAssertEqual(git.terminationStatus, 0, "git ls-files failed")
        let files = listing.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        XCTAssertGreaterThan(files.count, 10, "git ls-files listed almost nothing")

        let ownPath = thisFile.path.hasPrefix(root.path + "/") ? String(thisFile.path.dropFirst(root.path.count + 1)) : ""
        let patterns = needles.map { Data($0.utf8) }
        var offenders: [String] = []
        for file in files where file != ownPath {
            // A tracked file deleted in the work tree has no content to check.
            guard let content = FileManager.default.contents(atPath: root.appendingPathComponent(file).path) else { continue }
            for (needle, pattern) in zip(needles, patterns) where content.range(of: pattern) != nil {
                offenders.append("\(file) names \(needle)")
            }
        }
        XCTAssertEqual(offenders, [], "tracked files must read nothing outside the repository")
    }
}
