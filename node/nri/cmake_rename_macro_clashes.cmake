# Writes a copy of NRI's api.proto whose enum values that are also C macros (SCHED_OTHER,
# SCHED_FIFO, ... from <sched.h>, which every C++ program includes through <pthread.h>; MPOL_*
# from <numaif.h>, IOPRIO_* from <linux/ioprio.h>) carry an NRI_ prefix. protoc's C++ code names
# each value after it, and the preprocessor would turn those names into numbers. Only the names
# change: values are numbers on the wire, so the messages stay what upstream sends.
#   cmake -DINPUT=<api.proto> -DOUTPUT=<copy> -P cmake_rename_macro_clashes.cmake
file(READ "${INPUT}" text)
string(REGEX REPLACE "\n([ \t]+)(SCHED_[A-Z_]+|MPOL_[A-Z_]+|IOPRIO_[A-Z_]+)([ \t]*=)"
       "\n\\1NRI_\\2\\3" text "${text}")
file(WRITE "${OUTPUT}" "${text}")
