// leveldb_gen writes the fixture leveldb-1.23.ldb: a table written by
// LevelDB itself (Debian's libleveldb 1.23), for the sstable package's
// interop test. The Go test rebuilds the same contents with the same
// generator and compares.
//
//   g++ -O2 -o /tmp/leveldb_gen leveldb_gen.cc -lleveldb && /tmp/leveldb_gen /tmp/lvl
//   cp /tmp/lvl/*.ldb leveldb-1.23.ldb
#include <cstdio>
#include <cstdint>
#include <string>
#include "leveldb/db.h"
#include "leveldb/filter_policy.h"
#include "leveldb/write_batch.h"

static std::string Value(int i) {
  // Every third value compresses well; the others are pseudo-random.
  std::string v;
  size_t n = 10 + i % 200;
  if (i % 3 == 0) {
    while (v.size() < n) v += "v" + std::to_string(i);
    v.resize(n);
    return v;
  }
  uint64_t x = static_cast<uint64_t>(i) + 1;
  for (size_t j = 0; j < n; j++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    v.push_back(static_cast<char>(x >> 56));
  }
  return v;
}

int main(int argc, char** argv) {
  if (argc != 2) { fprintf(stderr, "usage: leveldb_gen DIR\n"); return 2; }
  leveldb::Options opts;
  opts.create_if_missing = true;
  opts.error_if_exists = true;
  opts.block_size = 1024;
  opts.filter_policy = leveldb::NewBloomFilterPolicy(10);
  leveldb::DB* db;
  leveldb::Status s = leveldb::DB::Open(opts, argv[1], &db);
  if (!s.ok()) { fprintf(stderr, "%s\n", s.ToString().c_str()); return 1; }
  char key[32];
  for (int i = 0; i < 600; i++) {
    snprintf(key, sizeof key, "key%06d", i);
    db->Put(leveldb::WriteOptions(), key, "old version");
  }
  for (int i = 0; i < 600; i++) {
    snprintf(key, sizeof key, "key%06d", i);
    if (i % 7 == 3) {
      db->Delete(leveldb::WriteOptions(), key);
    } else {
      db->Put(leveldb::WriteOptions(), key, Value(i));
    }
  }
  db->CompactRange(nullptr, nullptr);
  delete db;
  delete opts.filter_policy;
  return 0;
}
