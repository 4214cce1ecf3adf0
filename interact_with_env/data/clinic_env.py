from typing import Dict, Optional, TypedDict


class PatientInfo(TypedDict):
    patient_id: str
    name: str
    phone: str


class SlotInfo(TypedDict):
    slot_id: str
    doctor_id: str
    date: str
    time: str
    is_booked: bool


class AppointmentInfo(TypedDict):
    appointment_id: str
    patient_id: str
    slot_id: str
    status: str


class ClinicAppointmentSystem:
    def __init__(self, init_config: dict):
        self.patients: Dict[str, PatientInfo] = {}
        self.doctors: Dict[str, dict] = {}
        self.slots: Dict[str, SlotInfo] = {}
        self.appointments: Dict[str, AppointmentInfo] = {}

    def find_patient(self, name: str) -> dict:
        """Find patients by (part of) their name.

        Args:
            name: Full or partial patient name, case-insensitive.

        Returns:
            dict: {"success": True, "data": [PatientInfo, ...]}
        """
        found = [p for p in self.patients.values() if name.lower() in p["name"].lower()]
        return {"success": True, "data": found}

    def list_doctors(self, specialty: Optional[str] = None) -> dict:
        """List doctors, optionally only those of one specialty.

        Args:
            specialty: e.g. "cardiology"; all doctors when omitted.

        Returns:
            dict: {"success": True, "data": [{"doctor_id", "name", "specialty"}, ...]}
        """
        docs = [d for d in self.doctors.values() if specialty is None or d["specialty"] == specialty.lower()]
        return {"success": True, "data": docs}

    def list_free_slots(self, doctor_id: str, date: Optional[str] = None) -> dict:
        """Free appointment slots of a doctor.

        Args:
            doctor_id: The doctor.
            date: Only this day (YYYY-MM-DD) when given.

        Returns:
            dict: {"success": True, "data": [SlotInfo, ...]} or {"success": False, "error": str}
        """
        if doctor_id not in self.doctors:
            return {"success": False, "error": f"unknown doctor {doctor_id}"}
        free = [s for s in self.slots.values()
                if s["doctor_id"] == doctor_id and not s["is_booked"] and (date is None or s["date"] == date)]
        return {"success": True, "data": sorted(free, key=lambda s: (s["date"], s["time"]))}

    def get_patient_appointments(self, patient_id: str) -> dict:
        """Appointments of a patient (booked and cancelled).

        Args:
            patient_id: The patient.

        Returns:
            dict: {"success": True, "data": [AppointmentInfo, ...]} or {"success": False, "error": str}
        """
        if patient_id not in self.patients:
            return {"success": False, "error": f"unknown patient {patient_id}"}
        return {"success": True, "data": [a for a in self.appointments.values() if a["patient_id"] == patient_id]}

    def book_appointment(self, patient_id: str, slot_id: str) -> dict:
        """Book a free slot for a patient.

        Args:
            patient_id: The patient.
            slot_id: A free slot (see list_free_slots).

        Returns:
            dict: {"success": True, "data": AppointmentInfo} or {"success": False, "error": str}
        """
        if patient_id not in self.patients:
            return {"success": False, "error": f"unknown patient {patient_id}"}
        slot = self.slots.get(slot_id)
        if slot is None:
            return {"success": False, "error": f"unknown slot {slot_id}"}
        if slot["is_booked"]:
            return {"success": False, "error": f"slot {slot_id} is already booked"}
        appointment_id = f"A{len(self.appointments) + 1:03d}"
        appointment = {"appointment_id": appointment_id, "patient_id": patient_id, "slot_id": slot_id,
                       "status": "booked"}
        self.appointments[appointment_id] = appointment
        slot["is_booked"] = True
        return {"success": True, "data": appointment}

    def cancel_appointment(self, appointment_id: str) -> dict:
        """Cancel a booked appointment and free its slot.

        Args:
            appointment_id: The appointment.

        Returns:
            dict: {"success": True, "message": str} or {"success": False, "error": str}
        """
        appointment = self.appointments.get(appointment_id)
        if appointment is None or appointment["status"] != "booked":
            return {"success": False, "error": f"no booked appointment {appointment_id}"}
        appointment["status"] = "cancelled"
        self.slots[appointment["slot_id"]]["is_booked"] = False
        return {"success": True, "message": f"appointment {appointment_id} cancelled"}
