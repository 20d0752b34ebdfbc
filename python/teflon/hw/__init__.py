"""Hardware-description machinery shared by every NPU family (numpy-free; also imported at build time).

    regmap      register tables addressed by (unit, offset) and command words built from them (rocket regcmds)
    descriptor  descriptor tables: u32 word arrays with named bit fields (etnaviv NN/TP descriptors)
    gen_c_header  the C headers the simulators decode with, generated from the same tables
"""
