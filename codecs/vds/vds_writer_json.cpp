// The VolumeDataLayout JSON of a .vds view (notes §2.2): jsoncpp's shape,
// keys sorted (nlohmann::json's std::map), 4-space indent.
#include <nlohmann/json.hpp>

#include "codecs/vds/vds_writer_plan.hpp"

namespace ncafs::vds {
namespace {

const char* const kFormatNames[] = {"Format_1Bit", "Format_U8", "Format_U16", "Format_R32",
                                    "Format_U32",  "Format_R64", "Format_U64"};

nlohmann::json layout_descriptor(const WriterPlan& plan) {
    const Layout& l = plan.layout;
    return {{"brickSize", "BrickSize_" + std::to_string(1 << l.brick_log2)},
            {"brickSize2DMultiplier", l.multiplier_2d},
            {"create2DLODs", plan.group.size() == 2},
            {"forceFullResolutionDimension", false},
            {"fullResolutionDimension", -1},
            {"lodLevels", l.lod_levels == 0 ? std::string("LODLevels_None") : "LODLevels_" + std::to_string(l.lod_levels)},
            {"negativeMargin", 0},
            {"positiveMargin", 0}};
}

nlohmann::json channel_descriptor(const Channel& c, const WriterChannel& w) {
    return {{"allowLossyCompression", false}, {"channelMapping", "Direct"}, {"components", "Components_1"},
            {"discrete", false},              {"format", kFormatNames[static_cast<int>(c.format)]},
            {"integerOffset", c.offset},      {"integerScale", c.scale},
            {"mappedValues", 1},              {"name", c.name},
            {"noValue", c.no_value},          {"renderable", true},
            {"unit", c.unit},                 {"useNoValue", c.use_no_value},
            {"valueRange", {w.range_min, w.range_max}}};
}

}  // namespace

std::string layout_json(const WriterPlan& plan) {
    nlohmann::json doc;
    doc["layoutDescriptor"] = layout_descriptor(plan);
    doc["axisDescriptors"] = nlohmann::json::array();
    for (const Axis& a : plan.layout.axes)
        doc["axisDescriptors"].push_back({{"coordinateMax", a.max}, {"coordinateMin", a.min}, {"name", a.name},
                                          {"numSamples", a.samples}, {"unit", a.unit}});
    doc["channelDescriptors"] = nlohmann::json::array();
    for (size_t i = 0; i < plan.channels.size(); ++i)
        doc["channelDescriptors"].push_back(channel_descriptor(plan.layout.channels[i], plan.channels[i]));
    doc["metadata"] = nlohmann::json::array();
    for (const MetadataEntry& m : plan.layout.metadata)
        doc["metadata"].push_back({{"category", m.category}, {"name", m.name}, {"type", m.type}, {"value", m.value}});
    // Names come from netCDF files: invalid UTF-8 is replaced, not thrown on.
    return doc.dump(4, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ncafs::vds
