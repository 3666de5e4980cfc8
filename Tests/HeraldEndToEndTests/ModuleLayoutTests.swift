import Foundation
import Testing

/// The picture in Package.swift holds: every Swift module under Sources/ imports exactly the
/// modules its target declares, no more (an undeclared import builds only by accident of the
/// build order) and no fewer (a declared dependency nothing uses is a false arrow in the diagram).
@Suite struct ModuleLayoutTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// The platform's own modules, never declared.
    static let platform: Set<String> = ["Foundation", "Dispatch", "Glibc", "Musl", "Darwin", "Synchronization"]

    /// Each target's declared dependencies (target names and product names) from Package.swift.
    static func declared() throws -> [String: Set<String>] {
        let manifest = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        var out: [String: Set<String>] = [:]
        let target = try Regex(#"\.(?:target|executableTarget|testTarget)\(name: "([A-Za-z0-9_-]+)"(?:, dependencies: \[([^\]]*)\])?"#)
        let name = try Regex(#"(?:\.product\(name: )?"([A-Za-z0-9_-]+)""#)
        for match in manifest.matches(of: target) {
            let targetName = String(match.output[1].substring!)
            let list = match.output[2].substring.map(String.init) ?? ""
            var deps = Set<String>()
            for dep in list.matches(of: name) {
                let text = String(list[dep.range])
                // `.product(name: "Crypto", package: "swift-crypto")`: the module is the product's name.
                if text.hasPrefix("\"") && list[..<dep.range.lowerBound].hasSuffix("package: ") { continue }
                deps.insert(String(dep.output[1].substring!))
            }
            out[targetName] = deps
        }
        return out
    }

    /// What a module's Swift files import.
    static func imports(of folder: URL) throws -> Set<String> {
        var out = Set<String>()
        let statement = try Regex(#"^(?:@testable |@_implementationOnly |internal |public |package )?import (?:struct |enum |class )?([A-Za-z0-9_]+)"#)
        for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".swift") {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") {
                if let m = line.firstMatch(of: statement) { out.insert(String(m.output[1].substring!)) }
            }
        }
        return out.subtracting(platform)
    }

    @Test func everyModuleImportsExactlyWhatPackageSwiftDeclares() throws {
        let declared = try Self.declared()
        let sources = Self.root.appendingPathComponent("Sources")
        var checked = 0
        for module in try FileManager.default.contentsOfDirectory(atPath: sources.path).sorted() {
            let folder = sources.appendingPathComponent(module)
            let files = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            guard files.contains(where: { $0.hasSuffix(".swift") }) else { continue }  // C and system-library targets
            let deps = try #require(declared[module], "Sources/\(module) has no target in Package.swift")
            let used = try Self.imports(of: folder)
            #expect(used.subtracting(deps).isEmpty, "Sources/\(module) imports \(used.subtracting(deps).sorted()) without declaring it")
            #expect(deps.subtracting(used).isEmpty, "Sources/\(module) declares \(deps.subtracting(used).sorted()) and imports none of it")
            checked += 1
        }
        #expect(checked >= 12, "every Swift module is checked (\(checked))")
    }

    @Test func theCoreModuleDependsOnNothing() throws {
        #expect(try Self.declared()["HeraldCore"] == [])
        #expect(try Self.imports(of: Self.root.appendingPathComponent("Sources/HeraldCore")).isEmpty)
    }
}
