// The kernel cache: both tiers, the environment's directory, entries that
// must not be trusted (flipped byte, truncated, foreign, other version),
// failed writes, and concurrent writers (threads and processes).
#include "ScopedEnv.h"
#include "runtime/cache/CacheDirectory.h"
#include "runtime/cache/CacheEntryFile.h"
#include "runtime/cache/ContentHash.h"
#include "runtime/cache/KernelCache.h"

#include "frontend/TempDir.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <fstream>
#include <optional>
#include <set>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace kiln;
using namespace kiln::runtime;
using kiln::testing::TempDir;
namespace fs = std::filesystem;

using kiln::test::ScopedEnv;

namespace {

/// A payload that is not all one byte, so a flipped byte always changes it.
CacheEntry sampleEntry(std::string_view tag, size_t bytes = 4096) {
  CacheEntry entry;
  std::string ptx;
  for (size_t i = 0; i < bytes; ++i)
    ptx.push_back(static_cast<char>((i * 131 + tag.size() * 7) & 0xff));
  entry.sections["ptx"] = std::string(tag) + ptx;
  entry.sections["cubin"] = std::string("\0\x7f" "ELF binary", 12);
  entry.sections["meta"] = "arch=sm_90a";
  return entry;
}

std::string readAll(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void writeAll(const fs::path &path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Names in the kernels directory that are not finished entries.
std::vector<std::string> leftoverFiles(const fs::path &root) {
  std::vector<std::string> names;
  std::error_code error;
  for (fs::directory_iterator it(kernelEntryDirectory(root), error), end; !error && it != end;
       it.increment(error))
    if (!isEntryFileName(it->path().filename().string()))
      names.push_back(it->path().filename().string());
  return names;
}

/// A fresh cache on `root` (its memory tier empty), so a lookup must read the disk.
KernelCache diskCache(const fs::path &root) { return KernelCache({.root = root}); }

/// Stores an entry, damages its file with `damage`, and checks that the next
/// lookup rejects it with a warning containing `reason` and that a store rebuilds it.
void checkRejected(const std::function<void(const fs::path &, const std::string &)> &damage,
                   std::string_view reason) {
  TempDir dir;
  const std::string key = "sm_90a llvm 1 kernel: k0\nkernel body";
  diskCache(dir.path()).store(key, sampleEntry("a"));
  fs::path file = *diskCache(dir.path()).entryPath(key);
  REQUIRE(fs::exists(file));
  damage(file, readAll(file));

  KernelCache cache = diskCache(dir.path());
  CacheLookup rejected = cache.lookup(key);
  CHECK_FALSE(rejected.entry);
  REQUIRE(rejected.warnings.size() == 1);
  CHECK_THAT(rejected.warnings[0], Catch::Contains(file.filename().string()));
  CHECK_THAT(rejected.warnings[0], Catch::Contains(std::string(reason)));
  CHECK_THAT(rejected.warnings[0], Catch::Contains("rebuilding"));
  KernelCacheStats stats = cache.stats();
  CHECK(stats.rejected == 1);
  CHECK(stats.misses == 1);
  CHECK(stats.warnings == rejected.warnings);

  // The rebuilt entry replaces the bad file and is trusted again.
  CHECK(cache.store(key, sampleEntry("a")).writtenToDisk);
  CacheLookup again = diskCache(dir.path()).lookup(key);
  REQUIRE(again.entry);
  CHECK(*again.entry == sampleEntry("a"));
  CHECK(again.warnings.empty());
}

} // namespace

TEST_CASE("the content hash is stable, 128 bits wide and sensitive to every byte", "[cache]") {
  CHECK(hashBytes("kernel").hex().size() == 32);
  CHECK(hashBytes("kernel") == hashBytes(std::string("kernel")));
  CHECK(hashBytes("") != hashBytes(std::string_view("\0", 1)));
  CHECK(hashBytes("a") != hashBytes(std::string_view("a\0", 2)));
  std::set<std::string> seen;
  for (size_t length : {1u, 7u, 8u, 9u, 31u, 100u}) {
    std::string text(length, 'x');
    seen.insert(hashBytes(text).hex());
    for (size_t at = 0; at < length; ++at) {
      std::string flipped = text;
      flipped[at] ^= 0x01;
      seen.insert(hashBytes(flipped).hex());
    }
  }
  CHECK(seen.size() == 1 + 7 + 8 + 9 + 31 + 100 + 6);
  // The two lanes are independent, not one value twice.
  Hash128 hash = hashBytes("independent lanes");
  CHECK(hash.high != hash.low);
}

TEST_CASE("entry files round-trip and check their key", "[cache]") {
  CacheEntry entry = sampleEntry("x");
  std::string bytes = encodeCacheEntry("the key", entry);
  CHECK(bytes.starts_with(kCacheEntryMagic));
  auto decoded = decodeCacheEntry(bytes, "the key");
  REQUIRE(decoded);
  CHECK(*decoded == entry);
  CHECK(*readCacheEntryKey(bytes) == "the key");
  auto foreign = decodeCacheEntry(bytes, "another key");
  REQUIRE_FALSE(foreign);
  CHECK_THAT(foreign.error().message(), Catch::Contains("another key"));
  // Every prefix is rejected, none read past the end.
  for (size_t length = 0; length < bytes.size(); length += 97)
    CHECK_FALSE(decodeCacheEntry(std::string_view(bytes).substr(0, length), "the key"));
  CHECK_THAT(decodeCacheEntry("garbage that is long enough", "k").error().message(),
             Catch::Contains("not a kiln cache entry"));
}

TEST_CASE("the memory tier answers first and evicts the least recently used", "[cache]") {
  KernelCache cache({.root = std::nullopt, .memoryCapacityBytes = 3 * 5000});
  for (const char *key : {"a", "b", "c"})
    CHECK_FALSE(cache.store(key, sampleEntry(key)).writtenToDisk);
  CacheLookup hit = cache.lookup("a"); // a is now the most recent; b the least
  REQUIRE(hit.entry);
  CHECK(hit.tier == CacheTier::Memory);
  CHECK(*hit.entry == sampleEntry("a"));
  cache.store("d", sampleEntry("d"));
  CHECK_FALSE(cache.lookup("b").entry);
  CHECK(cache.lookup("a").entry);
  CHECK(cache.lookup("c").entry);
  CHECK(cache.lookup("d").entry);
  KernelCacheStats stats = cache.stats();
  CHECK(stats.memoryEntries == 3);
  CHECK(stats.memoryBytes <= 3 * 5000);
  CHECK(stats.memoryHits == 4);
  CHECK(stats.misses == 1);
  CHECK(stats.writes == 0);
  cache.dropMemoryTier();
  CHECK_FALSE(cache.lookup("a").entry);
}

TEST_CASE("the disk tier round-trips through a fresh cache", "[cache]") {
  TempDir dir;
  KernelCache writer = diskCache(dir.path());
  CacheStore stored = writer.store("key one", sampleEntry("one"));
  CHECK(stored.writtenToDisk);
  CHECK(stored.warnings.empty());
  CHECK(writer.stats().writes == 1);
  CHECK(writer.stats().bytesWritten > 4096);

  KernelCache reader = diskCache(dir.path());
  CacheLookup found = reader.lookup("key one");
  REQUIRE(found.entry);
  CHECK(found.tier == CacheTier::Disk);
  CHECK(*found.entry == sampleEntry("one"));
  // A disk hit is kept in memory.
  CHECK(reader.lookup("key one").tier == CacheTier::Memory);
  CHECK_FALSE(reader.lookup("key two").entry);
  KernelCacheStats stats = reader.stats();
  CHECK(stats.diskHits == 1);
  CHECK(stats.memoryHits == 1);
  CHECK(stats.misses == 1);
  CHECK(leftoverFiles(dir.path()).empty());

  auto listed = listCacheEntries(dir.path());
  REQUIRE(listed);
  REQUIRE(listed->size() == 1);
  CHECK((*listed)[0].key == "key one");
  CHECK((*listed)[0].problem.empty());
  CHECK((*listed)[0].path == *reader.entryPath("key one"));
}

TEST_CASE("the environment picks, moves and disables the cache directory", "[cache]") {
  ScopedEnv off("KILN_CACHE", nullptr);
  ScopedEnv dir("KILN_CACHE_DIR", nullptr);
  ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
  ScopedEnv home("HOME", "/home/kiln-test");
  CHECK(cacheLocationFromEnvironment().root == fs::path("/home/kiln-test/.cache/kiln"));
  {
    ScopedEnv set("XDG_CACHE_HOME", "/xdg");
    CHECK(cacheLocationFromEnvironment().root == fs::path("/xdg/kiln"));
    ScopedEnv moved("KILN_CACHE_DIR", "/elsewhere/kiln-cache");
    CacheLocation location = cacheLocationFromEnvironment();
    CHECK(location.root == fs::path("/elsewhere/kiln-cache"));
    CHECK(location.source == "$KILN_CACHE_DIR");
  }
  for (const char *value : {"off", "0", "OFF", "false"}) {
    ScopedEnv disabled("KILN_CACHE", value);
    ScopedEnv moved("KILN_CACHE_DIR", "/elsewhere/kiln-cache");
    CacheLocation location = cacheLocationFromEnvironment();
    CHECK_FALSE(location.root);
    CHECK_THAT(location.source, Catch::Contains("KILN_CACHE="));
  }
  ScopedEnv on("KILN_CACHE", "on");
  CHECK(cacheLocationFromEnvironment().root == fs::path("/home/kiln-test/.cache/kiln"));
}

TEST_CASE("a disabled disk tier keeps entries in memory and writes nothing", "[cache]") {
  TempDir dir;
  KernelCache cache({.root = std::nullopt});
  CacheStore stored = cache.store("k", sampleEntry("k"));
  CHECK_FALSE(stored.writtenToDisk);
  CHECK(stored.warnings.empty());
  CHECK_FALSE(cache.entryPath("k"));
  CHECK(cache.lookup("k").entry);
  CHECK(cache.stats().writes == 0);
  CHECK(dir.entries().empty());
}

TEST_CASE("a flipped byte is rejected, reported and rebuilt", "[cache]") {
  checkRejected(
      [](const fs::path &file, std::string bytes) {
        bytes[bytes.size() / 2] ^= 0x20;
        writeAll(file, bytes);
      },
      "checksum mismatch");
}

TEST_CASE("a truncated entry is rejected, reported and rebuilt", "[cache]") {
  checkRejected([](const fs::path &file,
                   const std::string &bytes) { writeAll(file, bytes.substr(0, bytes.size() - 9)); },
                "truncated");
  checkRejected([](const fs::path &file, const std::string &) { writeAll(file, ""); },
                "truncated");
}

TEST_CASE("an intact entry of another key under the same name is rejected", "[cache]") {
  checkRejected(
      [](const fs::path &file, const std::string &) {
        writeAll(file, encodeCacheEntry("some other key", sampleEntry("other")));
      },
      "another key");
}

TEST_CASE("an entry of another format version is rejected", "[cache]") {
  checkRejected(
      [](const fs::path &file, std::string bytes) {
        bytes[kCacheEntryMagic.size()] = static_cast<char>(kCacheEntryFormatVersion + 1);
        writeAll(file, bytes);
      },
      "format version 2");
  checkRejected([](const fs::path &file,
                   const std::string &) { writeAll(file, "#!/bin/sh\necho not a cache entry\n"); },
                "not a kiln cache entry");
}

TEST_CASE("a failed write warns once, leaves no file behind and loses nothing", "[cache]") {
  TempDir dir;
  SECTION("a root below a regular file") {
    writeAll(dir.path() / "file", "not a directory");
    KernelCache cache = diskCache(dir.path() / "file" / "cache");
    CacheStore first = cache.store("k", sampleEntry("k"));
    CHECK_FALSE(first.writtenToDisk);
    REQUIRE(first.warnings.size() == 1);
    CHECK_THAT(first.warnings[0], Catch::Contains("cannot create"));
    CHECK_THAT(first.warnings[0], Catch::Contains("KILN_CACHE_DIR"));
    CacheStore second = cache.store("k2", sampleEntry("k2"));
    CHECK_FALSE(second.writtenToDisk);
    CHECK(second.warnings.empty());
    CHECK(cache.stats().writeFailures == 2);
    CHECK(cache.lookup("k").entry); // still in memory
    CHECK(dir.entries() == std::set<std::string>{"file"});
  }
  SECTION("a read-only directory") {
    if (geteuid() == 0) {
      SUCCEED("permissions do not stop root; the regular-file parent covers the failure path");
      return;
    }
    fs::create_directories(kernelEntryDirectory(dir.path()));
    fs::permissions(kernelEntryDirectory(dir.path()), fs::perms::owner_read | fs::perms::owner_exec);
    KernelCache cache = diskCache(dir.path());
    CacheStore stored = cache.store("k", sampleEntry("k"));
    fs::permissions(kernelEntryDirectory(dir.path()), fs::perms::owner_all);
    CHECK_FALSE(stored.writtenToDisk);
    CHECK(stored.warnings.size() == 1);
    CHECK(fs::is_empty(kernelEntryDirectory(dir.path())));
  }
}

TEST_CASE("writers on many threads all succeed and leave whole entries", "[cache]") {
  TempDir dir;
  KernelCache shared = diskCache(dir.path());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      // Half the threads share one cache (one memory tier), half have their own.
      KernelCache own = diskCache(dir.path());
      KernelCache &cache = t % 2 ? shared : own;
      for (int i = 0; i < 20; ++i) {
        std::string key = fmt::format("key {}", i % 4); // every key written by every thread
        if (!cache.store(key, sampleEntry(key, 20000)).writtenToDisk)
          ++failures;
        CacheLookup found = cache.lookup(key);
        if (!found.entry || *found.entry != sampleEntry(key, 20000) || !found.warnings.empty())
          ++failures;
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  CHECK(failures == 0);
  CHECK(leftoverFiles(dir.path()).empty());
  for (int i = 0; i < 4; ++i) {
    std::string key = fmt::format("key {}", i);
    CacheLookup found = diskCache(dir.path()).lookup(key);
    REQUIRE(found.entry);
    CHECK(*found.entry == sampleEntry(key, 20000));
  }
}

TEST_CASE("two processes writing the same entry at once both succeed", "[cache]") {
  TempDir dir;
  const std::string key = "sm_90a nvrtc 1 kernel: k0\nthe same module in two processes";
  std::vector<pid_t> children;
  for (int child = 0; child < 2; ++child) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      // Each process compiles (here: builds a large payload) and stores it many
      // times while the other does the same, reading it back after every store.
      KernelCache cache = diskCache(dir.path());
      for (int round = 0; round < 25; ++round) {
        cache.dropMemoryTier();
        CacheLookup found = cache.lookup(key);
        if (!found.warnings.empty() || (found.entry && *found.entry != sampleEntry(key, 1 << 20)))
          _exit(2);
        if (!cache.store(key, sampleEntry(key, 1 << 20)).writtenToDisk)
          _exit(3);
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  CacheLookup found = diskCache(dir.path()).lookup(key);
  REQUIRE(found.entry);
  CHECK(*found.entry == sampleEntry(key, 1 << 20));
  CHECK(leftoverFiles(dir.path()).empty());
}

TEST_CASE("clear removes kiln's files only; stale temporaries go by age", "[cache]") {
  TempDir dir;
  KernelCache cache = diskCache(dir.path());
  cache.store("a", sampleEntry("a"));
  cache.store("b", sampleEntry("b"));
  fs::path kernels = kernelEntryDirectory(dir.path());
  const std::string temporary = temporaryFileName(hashBytes("crashed"));
  writeAll(kernels / temporary, "half an entry");
  writeAll(kernels / "notes.txt", "the user's file");
  writeAll(dir.path() / "other-cache.db", "another tool's file");
  CHECK(isTemporaryFileName(temporary));
  CHECK_FALSE(isEntryFileName(temporary));

  // A fresh temporary may belong to a live writer: only old ones are swept.
  CHECK(removeStaleTemporaries(kernels, std::chrono::seconds(3600)) == 0);
  auto listed = listCacheEntries(dir.path());
  REQUIRE(listed);
  CHECK(listed->size() == 2);

  auto cleared = clearCache(dir.path());
  REQUIRE(cleared);
  CHECK(cleared->entries == 2);
  CHECK(cleared->temporaries == 1);
  CHECK(cleared->bytes > 0);
  CHECK(leftoverFiles(dir.path()) == std::vector<std::string>{"notes.txt"});
  CHECK(fs::exists(dir.path() / "other-cache.db"));
  CHECK(listCacheEntries(dir.path())->empty());
  CHECK_FALSE(diskCache(dir.path()).lookup("a").entry);

  writeAll(kernels / temporary, "half an entry");
  fs::last_write_time(kernels / temporary,
                      fs::file_time_type::clock::now() - std::chrono::hours(2));
  CHECK(removeStaleTemporaries(kernels, std::chrono::seconds(3600)) == 1);
  CHECK(leftoverFiles(dir.path()) == std::vector<std::string>{"notes.txt"});
}

TEST_CASE("the disk tier stays under its bound, evicting the least recently used", "[cache]") {
  TempDir dir;
  CacheEntry entry = sampleEntry("a", 10000);
  int64_t entryBytes = static_cast<int64_t>(encodeCacheEntry("key-0", entry).size());
  // Room for four entries: the fifth write evicts down to three quarters (three entries).
  KernelCache cache({.root = dir.path(), .diskCapacityBytes = 4 * entryBytes + entryBytes / 2});
  fs::path directory = kernelEntryDirectory(dir.path());
  auto entryFile = [&](int i) { return *cache.entryPath(fmt::format("key-{}", i)); };
  auto age = [&](int i, int secondsAgo) {
    fs::last_write_time(entryFile(i),
                        fs::file_time_type::clock::now() - std::chrono::seconds(secondsAgo));
  };
  for (int i = 0; i < 4; ++i) {
    REQUIRE(cache.store(fmt::format("key-{}", i), entry).writtenToDisk);
    age(i, 100 - i); // key-0 is the oldest
  }
  CHECK(cache.stats().evicted == 0);
  // A disk hit is a use: key-0 becomes the most recent.
  cache.dropMemoryTier();
  REQUIRE(cache.lookup("key-0").entry);

  REQUIRE(cache.store("key-4", entry).writtenToDisk);
  CHECK(cache.stats().evicted == 2);
  CHECK(fs::exists(entryFile(0)));  // used last
  CHECK_FALSE(fs::exists(entryFile(1)));
  CHECK_FALSE(fs::exists(entryFile(2)));
  CHECK(fs::exists(entryFile(3)));
  CHECK(fs::exists(entryFile(4)));  // the one just written is never evicted
  int64_t total = 0;
  for (const auto &file : fs::directory_iterator(directory))
    total += static_cast<int64_t>(file.file_size());
  CHECK(total <= 4 * entryBytes + entryBytes / 2);

  // An evicted entry is a miss, rebuilt like any other.
  cache.dropMemoryTier();
  CHECK_FALSE(cache.lookup("key-1").entry);
  CHECK(cache.lookup("key-3").entry);
}

TEST_CASE("KILN_CACHE_MAX_MB sets the disk bound; nonsense keeps the default, with a warning",
          "[cache]") {
  {
    ScopedEnv env("KILN_CACHE_MAX_MB", "512");
    CHECK(cacheMaxBytesFromEnvironment() == int64_t{512} << 20);
  }
  for (const char *bad : {"", "0", "-5", "12x", "lots"}) {
    ScopedEnv env("KILN_CACHE_MAX_MB", bad);
    CHECK(cacheMaxBytesFromEnvironment() == kDefaultCacheMaxBytes);
  }
}
