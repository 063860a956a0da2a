// SPDX-License-Identifier: MIT
#include "clairfs/layout/framework_layout.hpp"

namespace clairfs::layout {

const char* layout_name(LayoutKind k) {
    switch (k) {
    case LayoutKind::imagefolder:
        return "imagefolder";
    case LayoutKind::sorted:
        return "sorted";
    case LayoutKind::list:
        return "list";
    case LayoutKind::keras_directory:
        return "keras_directory";
    case LayoutKind::glob:
        return "glob";
    case LayoutKind::ranges:
        return "ranges";
    }
    return "imagefolder";
}

std::string layout_for_job(const order::JobSpec& spec, std::optional<LayoutKind> given,
                           LayoutKind& out) {
    bool tf = spec.framework == order::Framework::tensorflow;
    if (!tf) {
        if (given == LayoutKind::keras_directory || given == LayoutKind::glob)
            return std::string("layout ") + layout_name(*given) + " needs framework tensorflow";
        out = given.value_or(LayoutKind::imagefolder);
        return "";
    }
    LayoutKind fixed = spec.pipeline == order::TfPipeline::list_files ? LayoutKind::glob
                                                                      : LayoutKind::keras_directory;
    if (given && *given != fixed)
        return std::string("layout ") + layout_name(*given) + " does not fit pipeline " +
               (fixed == LayoutKind::glob ? "list_files" : "image_dataset_from_directory") +
               " (its layout is " + layout_name(fixed) + "; leave layout out)";
    out = fixed;
    return "";
}

} // namespace clairfs::layout
