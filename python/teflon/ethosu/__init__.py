"""The ethosu family (Arm Ethos-U65 in the NXP i.MX93, driven by Linux accel/ethosu).

Being built (issue: Ethos-U, the third family). Modules:
    regs      the command set of the U65 (architecture 1.0.6) as data: opcodes, fields, enums
    cmdstream command words: pack, decode, pretty-print, Vela's COP1 driver-action header
    mlw       the weight stream codec (clean room; docs/hardware/ethosu-weights.md)
    bricks    the weight order of a kick-off's stream (OHWI <-> decoded values)
    scales    the 10-byte bias/multiplier/shift records per output channel
"""
