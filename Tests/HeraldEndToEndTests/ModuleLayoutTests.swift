import Foundation
import Testing

/// The picture in Package.swift holds: every Swift module under Sources/ imports exactly the
/// modules its target declares, no more (an undeclared import builds only by accident of the
/// build order) and no fewer (a declared dependency nothing uses is a false arrow in the diagram);
/// and docs/architecture.md's module table says what Package.swift says.
@Suite struct ModuleLayoutTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// The platform's own modules, never declared.
    static let platform: Set<String> = ["Foundation", "Dispatch", "Glibc", "Musl", "Darwin", "Synchronization"]

    /// Each target's declared dependencies (target names and product names) from Package.swift;
    /// system-library targets declare none.
    static func declared() throws -> [String: Set<String>] {
        let manifest = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        var out: [String: Set<String>] = [:]
        let target = try Regex(#"\.(?:target|executableTarget|testTarget|systemLibrary)\(name: "([A-Za-z0-9_-]+)"(?:, dependencies: \[([^\]]*)\])?"#)
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

    /// The module table of docs/architecture.md: each row's module (the bold first cell) and the
    /// names of its "depends on" cell (`nothing` is none; text in parentheses is a note).
    static func documentedModules() throws -> [String: Set<String>] {
        let text = try String(contentsOf: root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        let row = try Regex(#"^\| \*\*([^*]+)\*\* \| ([^|]*) \|"#)
        var out: [String: Set<String>] = [:]
        for line in text.split(separator: "\n") {
            guard let m = line.firstMatch(of: row) else { continue }
            let module = String(m.output[1].substring!)
            #expect(out[module] == nil, "docs/architecture.md lists \(module) twice")
            let cell = String(m.output[2].substring!).replacing(/\([^)]*\)/, with: "").trimmingCharacters(in: .whitespaces)
            out[module] = cell == "nothing" ? [] : Set(cell.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        }
        return out
    }

    @Test func theArchitectureTableMatchesPackageSwift() throws {
        let declared = try Self.declared()
        let documented = try Self.documentedModules()
        #expect(documented.count >= 12, "docs/architecture.md's module table has \(documented.count) rows: the row pattern is broken")
        let sources = Self.root.appendingPathComponent("Sources")
        let modules = Set(try FileManager.default.contentsOfDirectory(atPath: sources.path).filter {
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: sources.appendingPathComponent($0).path, isDirectory: &isDirectory) && isDirectory.boolValue
        })
        for module in modules.sorted() {
            #expect(declared[module] != nil, "Sources/\(module) has no target in Package.swift")
            #expect(documented[module] != nil, "Sources/\(module) has no row in docs/architecture.md's module table")
        }
        for (module, deps) in documented.sorted(by: { $0.key < $1.key }) {
            guard modules.contains(module), let real = declared[module] else {
                Issue.record("docs/architecture.md's module table has a row for \(module), which is no target under Sources/")
                continue
            }
            #expect(deps.subtracting(real).isEmpty, "docs/architecture.md says \(module) depends on \(deps.subtracting(real).sorted()), which Package.swift does not declare")
            #expect(real.subtracting(deps).isEmpty, "Package.swift has \(module) depend on \(real.subtracting(deps).sorted()), which docs/architecture.md's table leaves out")
        }
    }

    @Test func theCoreModuleDependsOnNothing() throws {
        #expect(try Self.declared()["HeraldCore"] == [])
        #expect(try Self.imports(of: Self.root.appendingPathComponent("Sources/HeraldCore")).isEmpty)
    }
}
