// The check that every flipped byte of a saved index is refused: each byte of a file
// of the current format version is changed in turn (to every other value in the
// 20-byte header, else inverted and XORed with a random non-zero mask), and loading
// the changed file must throw a faiss::FaissException that names where the byte lies.
// Under compute-sanitizer, where each load through deserialize_index costs device
// allocations, a sample of the bytes (flippedBytePositions). Used on the host images
// (cpu_index_io.cpp) and through deserialize_index (gpu_index_contract.cpp).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <faiss/impl/FaissAssert.h>
#include <gtest/gtest.h>

#include "LegacyIndexFiles.h"
#include "TestUtil.h"

namespace faiss_ext {
namespace test {

/// What the message of a refusal must contain for a byte at `pos`. The version field
/// only has to be refused: a version changed to an older one reads the header's
/// checksum as a dimension, refused as such.
inline std::string expectedRefusal(
        const std::vector<uint8_t>& file,
        const std::vector<SectionSpan>& spans,
        const std::vector<std::string>& sectionNames,
        size_t pos) {
    if (pos < 8) {
        return "not a faiss_ext index";
    }
    if (pos < 12) {
        return "";
    }
    if (pos < 20) {
        return "header is corrupted";
    }
    if (pos >= file.size() - 8) {
        return "end marker is corrupted";
    }
    for (size_t s = 0; s < spans.size(); ++s) {
        if (pos < spans[s].end) {
            return "section '" + sectionNames.at(s) + "'";
        }
    }
    return "?";
}

/// The bytes changed in turn: every one, or under compute-sanitizer the header, each
/// section's length and checksum (its first 12 bytes), first and last bytes, every 31st
/// byte, and the end marker.
inline std::vector<size_t> flippedBytePositions(
        const std::vector<uint8_t>& file,
        const std::vector<SectionSpan>& spans) {
    std::vector<size_t> positions;
    for (size_t pos = 0; pos < file.size(); ++pos) {
        bool take = !underSanitizer() || pos < 20 || pos >= file.size() - 8 || pos % 31 == 0;
        for (const SectionSpan& span : spans) {
            take = take || (pos >= span.begin && pos <= span.begin + 12) || pos + 1 == span.end;
        }
        if (take) {
            positions.push_back(pos);
        }
    }
    return positions;
}

/// load(bytes) parses (or builds) an index from the bytes. sectionNames: the names of
/// the file's sections, in order.
template <typename Load>
void expectEveryFlippedByteRefused(
        const std::vector<uint8_t>& file,
        const std::vector<std::string>& sectionNames,
        uint64_t seed,
        Load&& load) {
    const std::vector<SectionSpan> spans = sectionSpans(file);
    ASSERT_EQ(spans.size(), sectionNames.size());
    ASSERT_NO_THROW(load(file));
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> mask(1, 255);
    std::vector<uint8_t> changed = file;
    int64_t failures = 0;
    for (size_t pos : flippedBytePositions(file, spans)) {
        if (failures >= 10) {
            break;
        }
        const std::string expected = expectedRefusal(file, spans, sectionNames, pos);
        std::vector<int> masks = {0xFF, mask(rng)};
        if (pos < 20) {
            masks.clear();
            for (int m = 1; m < 256; ++m) {
                masks.push_back(m);
            }
        }
        for (int m : masks) {
            changed[pos] = uint8_t(file[pos] ^ m);
            try {
                load(changed);
                ADD_FAILURE() << "byte " << pos << " of " << file.size() << " XOR " << m
                              << " loaded";
                ++failures;
            } catch (const faiss::FaissException& e) {
                if (std::string(e.what()).find(expected) == std::string::npos) {
                    ADD_FAILURE() << "byte " << pos << " XOR " << m << ": expected '" << expected
                                  << "' in: " << e.what();
                    ++failures;
                }
            }
        }
        changed[pos] = file[pos];
    }
}

} // namespace test
} // namespace faiss_ext
