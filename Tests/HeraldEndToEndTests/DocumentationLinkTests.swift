import Foundation
import Testing

/// The documentation keeps its own promises: every relative link in README.md and docs/*.md reaches
/// a file (and, with `#anchor`, a heading or `<a id>` in it), the README links every docs/ page and
/// stays short, and no file points into a folder outside the project.
@Suite struct DocumentationLinkTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// README.md and every docs/*.md, as paths relative to the repository root.
    static func markdownFiles() throws -> [String] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
        return ["README.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
    }

    @Test func everyRelativeLinkResolves() throws {
        var checked = 0
        var anchorsByFile: [String: Set<String>] = [:]
        for file in try Self.markdownFiles() {
            let url = Self.root.appendingPathComponent(file)
            for link in Markdown.links(in: try String(contentsOf: url, encoding: .utf8)) {
                let target = link.target
                if ["http:", "https:", "mailto:"].contains(where: { target.hasPrefix($0) }) { continue }
                checked += 1
                let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                let path = String(parts[0]).removingPercentEncoding ?? String(parts[0])
                let destination = path.isEmpty ? url
                    : url.deletingLastPathComponent().appendingPathComponent(path).standardizedFileURL
                let place = "\(file):\(link.line): (\(target))"
                guard FileManager.default.fileExists(atPath: destination.path) else {
                    Issue.record("\(place): no file \(destination.path)")
                    continue
                }
                guard parts.count == 2 else { continue }
                let anchors = try anchorsByFile[destination.path] ?? Markdown.anchors(in: String(contentsOf: destination, encoding: .utf8))
                anchorsByFile[destination.path] = anchors
                #expect(anchors.contains(String(parts[1])), "\(place): no heading or <a id> with that anchor in \(destination.lastPathComponent)")
            }
        }
        #expect(checked > 0, "no relative link found: the link extraction is broken")
    }

    @Test func readmeLinksEveryDocsPage() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let targets = Set(Markdown.links(in: readme).map { String($0.target.split(separator: "#")[0]) })
        for page in try Self.markdownFiles() where page.hasPrefix("docs/") {
            #expect(targets.contains(page), "README.md does not link \(page)")
        }
    }

    @Test func readmeIsShort() throws {
        let size = try FileManager.default.attributesOfItem(atPath: Self.root.appendingPathComponent("README.md").path)[.size] as? Int
        #expect((size ?? .max) <= 15_360, "README.md is \(size ?? -1) bytes; move detail into docs/")
    }

    @Test func nothingRefersToTheSharedFolder() throws {
        let needle = Data((".." + "/shared").utf8)   // in two parts, so this file does not match itself
        var scanned = 0
        for entry in ["README.md", "docs", "Sources", "Tests", "Benchmarks", "Makefile", "Package.swift"] {
            let top = Self.root.appendingPathComponent(entry).path
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: top, isDirectory: &isDirectory) else { continue }
            let inside = isDirectory.boolValue ? (FileManager.default.enumerator(atPath: top)?.compactMap { $0 as? String } ?? []) : [""]
            for relative in inside where !relative.split(separator: "/").contains(where: { $0.hasPrefix(".") }) {
                let path = relative.isEmpty ? top : top + "/" + relative
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
                      let data = FileManager.default.contents(atPath: path) else { continue }
                scanned += 1
                if data.range(of: needle) != nil {
                    Issue.record("\(path.dropFirst(Self.root.path.count + 1)) refers to \(String(decoding: needle, as: UTF8.self)), a folder outside the project")
                }
            }
        }
        #expect(scanned > 100, "only \(scanned) files scanned")
    }
}

/// Just enough Markdown for the checks above: inline links and GitHub's heading anchors, outside fenced code.
private enum Markdown {
    struct Link { let line: Int; let target: String }

    /// The lines outside fenced code blocks, with their 1-based numbers.
    static func prose(_ text: String) -> [(number: Int, text: Substring)] {
        var inFence = false
        var out: [(Int, Substring)] = []
        for (i, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.drop { $0 == " " }
            if trimmed.hasPrefix("```") || trimmed.hasPrefix("~~~") { inFence.toggle(); continue }
            if !inFence { out.append((i + 1, line)) }
        }
        return out
    }

    /// `[text](target)` links; code spans are removed first, so `[x](y)` inside backticks is not a link.
    static func links(in text: String) -> [Link] {
        prose(text).flatMap { line in
            line.text.replacing(/`[^`]*`/, with: "").matches(of: /\[[^\]]*\]\(([^)\s]+)\)/).map {
                Link(line: line.number, target: String($0.1))
            }
        }
    }

    /// Every anchor a link may name: GitHub's slug of each heading (lower case; only letters, digits,
    /// spaces, `-` and `_` kept; spaces to `-`; a repeated slug gets -1, -2, …) and `<a id|name="…">`.
    static func anchors(in text: String) -> Set<String> {
        var anchors = Set<String>()
        var seen: [String: Int] = [:]
        for line in prose(text) {
            for match in line.text.matches(of: /<a\s+(?:id|name)="([^"]+)"/) { anchors.insert(String(match.1)) }
            guard let heading = line.text.wholeMatch(of: /#{1,6}\s+(.*?)[\s#]*/) else { continue }
            let title = String(heading.1).replacing(/\[([^\]]*)\]\([^)]*\)/) { String($0.1) }
            var slug = ""
            for c in title.lowercased() where c.isLetter || c.isNumber || c == " " || c == "-" || c == "_" {
                slug.append(c == " " ? "-" : c)
            }
            let n = seen[slug, default: 0]
            seen[slug] = n + 1
            anchors.insert(n == 0 ? slug : "\(slug)-\(n)")
        }
        return anchors
    }
}
