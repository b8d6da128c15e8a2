#pragma once
// The prepared-claims checkpoint: one record per claim in <state-dir>/checkpoints/<claimUID>.json
// (one file per claim so prepares of different claims never contend, and a damaged record never
// takes the others with it). Each file is versioned JSON with a CRC-32C of its record, written
// atomically. Records hold what is needed to recompute every CDI edit after a reboot (stable
// identities such as PCI addresses, never device-node numbers). A record is written once, after
// the claim's files: it is the one point that makes a prepare count (see Preparer). Its state is
// "completed"; "started" is only read, from checkpoints of versions that wrote one before the
// files, and rolled back.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "numadra/common/files.hpp"
#include "numadra/common/result.hpp"

namespace numadra::state {

inline constexpr int kCheckpointVersion = 1;

enum class ClaimState { PrepareStarted, PrepareCompleted };

// One allocated device (or share of one) as prepared.
struct DeviceRecord {
    std::string request;  // full request name from the allocation ("req" or "req/sub")
    std::string pool;
    std::string device;
    std::optional<std::string> shareId;
    bool adminAccess = false;  // admin claims share devices with the claims they watch
    // The claim's configuration asks for its containers' memory on this device's NUMA node
    // (memoryBinding: NumaNode, applied through NRI).
    bool bindMemory = false;
    std::string kind;        // gpu, accelerator, nic, cpu
    std::string pciAddress;  // PCI devices: the stable identity ...
    std::uint16_t vendorId = 0;
    std::uint16_t deviceId = 0;  // ... checked again before the record is honoured
    // PCIe Device Serial Number when the card has one and it was readable: tells the prepared
    // card from another of the same model put in the same slot. Empty: none known.
    std::string serialNumber;
    // NICs: the netdev as prepared. Once CNI moves it into the pod, the host no longer shows it,
    // and repairs must not drop it from the container's view.
    std::string interfaceName;
    std::string hardwareAddress;
    std::optional<int> numaNode;                          // CPU devices
    std::vector<int> cpus;                                // CPU shares: the CPUs handed out
    std::map<std::string, std::string> consumedCapacity;  // name -> quantity text
    std::vector<std::string> cdiDeviceIds;
    bool operator==(const DeviceRecord&) const = default;
};

struct ClaimRecord {
    std::string claimNamespace, claimName, claimUid;
    std::optional<std::string> podClaimName;
    ClaimState state = ClaimState::PrepareStarted;
    std::string bootId;  // kernel boot id when the files were last written
    std::vector<DeviceRecord> devices;
    std::vector<std::string> files;                           // absolute paths we create
    std::map<std::string, std::int64_t> metadataGenerations;  // base request -> generation
    bool operator==(const ClaimRecord&) const = default;
};

std::string encode(const ClaimRecord& record);
// The same, but an error (instead of replacement characters) for text that is not valid UTF-8,
// so what is written always reads back identically.
Result<std::string> encodeExactly(const ClaimRecord& record);

// Errors name `source` and what is wrong: not JSON, unknown version (newer than this binary
// knows: refuse to guess), checksum mismatch, missing or mistyped field.
Result<ClaimRecord> decode(std::string_view content, std::string_view source);

struct QuarantinedFile {
    std::string path;  // where the file now is (<state-dir>/quarantine/...)
    std::string reason;
};

struct LoadedCheckpoint {
    std::vector<ClaimRecord> records;  // sorted by claim UID
    std::vector<QuarantinedFile> quarantined;
};

class CheckpointStore {
  public:
    // Creates <stateDir>/checkpoints and <stateDir>/quarantine (0700) when missing.
    static Result<CheckpointStore> open(const std::string& stateDir);

    // Atomic, and durable once returned (the file and the folder fsynced) unless the folder is on
    // a volatile filesystem, where no fsync could keep it anyway.
    Status save(const ClaimRecord& record);      // replaces the claim's record
    Status remove(const std::string& claimUid);  // missing is success; durable like save

    // Reads every record. A file that cannot be decoded is moved to the quarantine folder
    // (never deleted, never guessed at) and reported; loading goes on with the others.
    Result<LoadedCheckpoint> load();

    // The claim UIDs that have a record, sorted, from the folder's listing alone (nothing is read).
    Result<std::vector<std::string>> recordedUids() const;
    // One claim's record; an error of kind NotFound when it has none. A damaged record is an
    // error, left in place.
    Result<ClaimRecord> read(const std::string& claimUid) const;

    // Moves a record that cannot be honoured out of the way, with a reason file beside it.
    Status quarantine(const std::string& claimUid, const std::string& reason);
    // Drops a quarantined record of the claim (Unprepare of such a claim); missing is success.
    Status removeQuarantined(const std::string& claimUid);
    // The claim UIDs with a quarantined record, sorted: their files stay until they are
    // unprepared.
    Result<std::vector<std::string>> quarantinedUids() const;

    std::string recordPath(const std::string& claimUid) const;
    // A UID that can name a file: 1-128 characters of [A-Za-z0-9-].
    static bool isValidUid(std::string_view claimUid);
    const std::string& directory() const { return checkpointDir_; }

  private:
    CheckpointStore(std::string checkpointDir, std::string quarantineDir);
    std::string checkpointDir_;
    std::string quarantineDir_;
    // Decided once, at open (statfs of the checkpoint folder).
    files::Durability recordDurability_ = files::Durability::Full;
};

// The kernel boot id (<procRoot>/sys/kernel/random/boot_id), trimmed.
Result<std::string> readBootId(const std::string& procRoot);

}  // namespace numadra::state
